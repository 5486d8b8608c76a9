# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_forwarder_global_optspecs
    string join \n c/config= socket= h/help V/version
end

function __fish_forwarder_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_forwarder_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_forwarder_using_subcommand
    set -l cmd (__fish_forwarder_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c forwarder -n "__fish_forwarder_needs_command" -s c -l config -d 'The configuration file, for any command (a command\'s own `--config` wins); else $FORWARDER_CONFIG' -r -F
complete -c forwarder -n "__fish_forwarder_needs_command" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_needs_command" -s h -l help -d 'Print help'
complete -c forwarder -n "__fish_forwarder_needs_command" -s V -l version -d 'Print version'
complete -c forwarder -n "__fish_forwarder_needs_command" -f -a "run" -d 'Forward packets; print rates once a second and a summary at the end'
complete -c forwarder -n "__fish_forwarder_needs_command" -f -a "reload" -d 'Make the running forwarder reload its configuration now'
complete -c forwarder -n "__fish_forwarder_needs_command" -f -a "check" -d 'Check a configuration without running it'
complete -c forwarder -n "__fish_forwarder_needs_command" -f -a "stats" -d 'Print the running forwarder\'s counters (JSON), or its rates'
complete -c forwarder -n "__fish_forwarder_needs_command" -f -a "neighbours" -d 'Print the running forwarder\'s neighbour table (JSON)'
complete -c forwarder -n "__fish_forwarder_needs_command" -f -a "trace" -d 'Explain what the pipeline does to a packet, stage by stage'
complete -c forwarder -n "__fish_forwarder_needs_command" -f -a "capture" -d 'Capture the running forwarder\'s frames as pcapng'
complete -c forwarder -n "__fish_forwarder_needs_command" -f -a "route" -d 'Show the running forwarder\'s routes: `get ADDR`, `list`'
complete -c forwarder -n "__fish_forwarder_needs_command" -f -a "conntrack" -d 'List, count or flush the running forwarder\'s tracked connections'
complete -c forwarder -n "__fish_forwarder_needs_command" -f -a "element" -d 'Add, delete or list a set\'s elements in the running forwarder'
complete -c forwarder -n "__fish_forwarder_needs_command" -f -a "completions" -d 'Print the shell completion script for bash, zsh, fish, elvish or powershell'
complete -c forwarder -n "__fish_forwarder_needs_command" -f -a "man" -d 'Write the manual pages (roff): forwarder(1) and one a command'
complete -c forwarder -n "__fish_forwarder_needs_command" -f -a "lookup" -d 'Classify keys from a file against a set file, without packets'
complete -c forwarder -n "__fish_forwarder_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c forwarder -n "__fish_forwarder_using_subcommand run" -s c -l config -d 'The configuration file' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand run" -l duration -d 'Stop after this long (`10s`, `500ms`, `2m`); default: Ctrl-C' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand run" -l mode -d 'Run only part of the pipeline, to measure a stage: `io` (receive and send out of the first port, frames untouched), `mac` (MACs set to the first next hop\'s, nothing parsed), `rewrite` (parse, MAC/TTL rewrite towards the first next hop), `route` (+ routing, no rule sets), `full` (default)' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand run" -l log-format -d 'The log on standard error: `text` (`forwarder: LEVEL: message`) or `json` (one object a line: `ts`, `level`, `msg`, and the event\'s fields: `event`, `generation`, `file`, `line`, ...)' -r -f -a "text\t''
json\t''"
complete -c forwarder -n "__fish_forwarder_using_subcommand run" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand reload" -s c -l config -d 'The configuration file the forwarder was started with' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand reload" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand reload" -l check -d 'Check the configuration first (as `forwarder check`) and, if it has problems, print them and ask nothing of the forwarder'
complete -c forwarder -n "__fish_forwarder_using_subcommand reload" -l diff -d 'Print what the reload changes (sets rebuilt, elements added and removed, routes, next hops, ECMP groups; with their lines), worked out from the very configuration it then applies'
complete -c forwarder -n "__fish_forwarder_using_subcommand reload" -l json -d 'Print the answer as JSON on standard output, a refusal too (`result`, `error`, `errors` placed as `check --json` places them; exit 1); with `--diff`, the diff inside'
complete -c forwarder -n "__fish_forwarder_using_subcommand reload" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand check" -s c -l config -d 'The configuration file' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand check" -l against -d 'With `--diff`: the configuration the running forwarder was started with (default: `--config` itself, edited since)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand check" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand check" -l json -d 'Print JSON (`ok`, and `errors` or the summary\'s figures)'
complete -c forwarder -n "__fish_forwarder_using_subcommand check" -l offline -d 'Check it for another host: everything but this host\'s interfaces and cores (the ports\' drivers, files, sets, routes and tables all the same)'
complete -c forwarder -n "__fish_forwarder_using_subcommand check" -l diff -d 'Also print what a reload of it would change in the running forwarder (applying nothing)'
complete -c forwarder -n "__fish_forwarder_using_subcommand check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand stats" -s c -l config -d 'The configuration file the forwarder was started with' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand stats" -l count -d 'With `--watch`: stop after this many seconds' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand stats" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand stats" -l watch -d 'Print rates once a second, as `run` does'
complete -c forwarder -n "__fish_forwarder_using_subcommand stats" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand neighbours" -s c -l config -d 'The configuration file the forwarder was started with' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand neighbours" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand neighbours" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand trace" -s c -l config -d 'The configuration file (the running forwarder\'s, or the one to trace against with `--offline`)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand trace" -l packet -d 'The packet in the words of a set\'s `match`: `iif wan ip saddr 192.0.2.7 ip daddr 198.51.100.9 tcp dport 443` (fields not given take stated defaults)' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand trace" -l hex -d 'The packet as a frame in hexadecimal' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand trace" -l pcap -d 'The packet as the first frame of a pcap or pcapng file' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand trace" -l port -d 'The port the packet arrives on (for `--hex` and `--pcap`; words may say `iif`); with `--live`, the port whose packets are traced' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand trace" -l candidate -d 'Also trace against this configuration file, as a reload of it would make the tables, and say what changes for the packet' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand trace" -l count -d 'With `--live`: how many packets (default 1)' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand trace" -l filter -d 'With `--live`: only packets that pass this filter (the words of a set\'s `match`)' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand trace" -l timeout -d 'With `--live`: give up after this many seconds without the packets' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand trace" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand trace" -l offline -d 'Trace against the configuration file, not the running forwarder'
complete -c forwarder -n "__fish_forwarder_using_subcommand trace" -l live -d 'Trace the next packets of `--port` on the workers themselves'
complete -c forwarder -n "__fish_forwarder_using_subcommand trace" -l json -d 'Print JSON'
complete -c forwarder -n "__fish_forwarder_using_subcommand trace" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand capture" -l config -d 'The configuration file the forwarder was started with' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand capture" -l port -d 'A port to capture (repeat for more: one interface block each)' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand capture" -l filter -d 'Only frames that pass this filter (the words of a set\'s `match`)' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand capture" -s c -l count -d 'Stop after this many frames' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand capture" -s s -l snaplen -d 'Bytes kept of each frame (default: all, up to 2048)' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand capture" -l ring -d 'Slots of 1,024 frames each worker\'s ring holds (default 16): a larger ring rides out longer pauses of the writer' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand capture" -l per-burst -d 'Frames a worker copies of each burst, at most (default 8; 0: all). Below full rate bursts are short and every frame is kept; at full rate each burst\'s first frames are, the rest counted as not kept, so that forwarding keeps its rate. `0` keeps everything the writer keeps up with, at a cost to forwarding (BENCHMARKS.md)' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand capture" -s w -l write -d 'Where to write: a file, or `-` for standard output' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand capture" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand capture" -l rx -d 'The frames the ports receive'
complete -c forwarder -n "__fish_forwarder_using_subcommand capture" -l tx -d 'The frames the ports send (after the rewrite; the slow path\'s answers too)'
complete -c forwarder -n "__fish_forwarder_using_subcommand capture" -l drops -d 'The frames the ports receive that are not forwarded, each with why (`opt_comment` `drop: REASON`, or `punt: REASON` for those handed to the slow path). Without `--rx`, `--tx` or `--drops`: received and sent'
complete -c forwarder -n "__fish_forwarder_using_subcommand capture" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and not __fish_seen_subcommand_from get list help" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and not __fish_seen_subcommand_from get list help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and not __fish_seen_subcommand_from get list help" -f -a "get" -d 'The route an address takes, as `ip route get`'
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and not __fish_seen_subcommand_from get list help" -f -a "list" -d 'List routes, as `ip route show`'
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and not __fish_seen_subcommand_from get list help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and __fish_seen_subcommand_from get" -l vrf -d 'In this VRF (`default` where not given), as `ip route get vrf`' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and __fish_seen_subcommand_from get" -s c -l config -d 'The configuration file' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and __fish_seen_subcommand_from get" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and __fish_seen_subcommand_from get" -l offline -d 'The file\'s tables, not the running forwarder\'s'
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and __fish_seen_subcommand_from get" -l json -d 'Print JSON'
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and __fish_seen_subcommand_from get" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and __fish_seen_subcommand_from list" -l origin -d 'Only routes from here: config, route_file, kernel, connected, local, router' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and __fish_seen_subcommand_from list" -l vrf -d 'The routes of this VRF (`default` where not given), as `ip route show vrf`' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and __fish_seen_subcommand_from list" -s c -l config -d 'The configuration file' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and __fish_seen_subcommand_from list" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and __fish_seen_subcommand_from list" -l offline -d 'The file\'s tables, not the running forwarder\'s'
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and __fish_seen_subcommand_from list" -l json -d 'One JSON object a line, and a last line with the count'
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and __fish_seen_subcommand_from help" -f -a "get" -d 'The route an address takes, as `ip route get`'
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and __fish_seen_subcommand_from help" -f -a "list" -d 'List routes, as `ip route show`'
complete -c forwarder -n "__fish_forwarder_using_subcommand route; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and not __fish_seen_subcommand_from list count flush help" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and not __fish_seen_subcommand_from list count flush help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and not __fish_seen_subcommand_from list count flush help" -f -a "list" -d 'List the connections, as `conntrack -L`'
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and not __fish_seen_subcommand_from list count flush help" -f -a "count" -d 'Count the connections, as `conntrack -C`'
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and not __fish_seen_subcommand_from list count flush help" -f -a "flush" -d 'Forget every connection, as `conntrack -F`'
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and not __fish_seen_subcommand_from list count flush help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and __fish_seen_subcommand_from list" -s c -l config -d 'The configuration file the forwarder was started with' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and __fish_seen_subcommand_from list" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and __fish_seen_subcommand_from list" -l json -d 'Print JSON (`connections`, `count` or `flushed`)'
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and __fish_seen_subcommand_from count" -s c -l config -d 'The configuration file the forwarder was started with' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and __fish_seen_subcommand_from count" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and __fish_seen_subcommand_from count" -l json -d 'Print JSON (`connections`, `count` or `flushed`)'
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and __fish_seen_subcommand_from count" -s h -l help -d 'Print help'
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and __fish_seen_subcommand_from flush" -s c -l config -d 'The configuration file the forwarder was started with' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and __fish_seen_subcommand_from flush" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and __fish_seen_subcommand_from flush" -l json -d 'Print JSON (`connections`, `count` or `flushed`)'
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and __fish_seen_subcommand_from flush" -s h -l help -d 'Print help'
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and __fish_seen_subcommand_from help" -f -a "list" -d 'List the connections, as `conntrack -L`'
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and __fish_seen_subcommand_from help" -f -a "count" -d 'Count the connections, as `conntrack -C`'
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and __fish_seen_subcommand_from help" -f -a "flush" -d 'Forget every connection, as `conntrack -F`'
complete -c forwarder -n "__fish_forwarder_using_subcommand conntrack; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and not __fish_seen_subcommand_from add delete list reset help" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and not __fish_seen_subcommand_from add delete list reset help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and not __fish_seen_subcommand_from add delete list reset help" -f -a "add" -d 'Add elements (all or none)'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and not __fish_seen_subcommand_from add delete list reset help" -f -a "delete" -d 'Delete elements by their exact key (all or none)'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and not __fish_seen_subcommand_from add delete list reset help" -f -a "list" -d 'Print the set\'s elements in force, as `nft -n list set` does'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and not __fish_seen_subcommand_from add delete list reset help" -f -a "reset" -d 'Set the element counters of a set (`counter = true`), or of every set, back to zero, as `nft reset set` and `nft reset counters`'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and not __fish_seen_subcommand_from add delete list reset help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from add" -s c -l config -d 'The configuration file the forwarder was started with' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from add" -l file -d 'Also the elements of this file, one a line (`-`: standard input)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from add" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from add" -l json -d 'Print the answer as JSON on standard output, a refusal too (`result`, `error`, `errors`; exit 1)'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from add" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from delete" -s c -l config -d 'The configuration file the forwarder was started with' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from delete" -l file -d 'Also the elements of this file, one a line (`-`: standard input)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from delete" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from delete" -l json -d 'Print the answer as JSON on standard output, a refusal too (`result`, `error`, `errors`; exit 1)'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from delete" -s h -l help -d 'Print help'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from list" -s c -l config -d 'The configuration file the forwarder was started with' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from list" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from reset" -s c -l config -d 'The configuration file the forwarder was started with' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from reset" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from reset" -s h -l help -d 'Print help'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from help" -f -a "add" -d 'Add elements (all or none)'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from help" -f -a "delete" -d 'Delete elements by their exact key (all or none)'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from help" -f -a "list" -d 'Print the set\'s elements in force, as `nft -n list set` does'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from help" -f -a "reset" -d 'Set the element counters of a set (`counter = true`), or of every set, back to zero, as `nft reset set` and `nft reset counters`'
complete -c forwarder -n "__fish_forwarder_using_subcommand element; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c forwarder -n "__fish_forwarder_using_subcommand completions" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand man" -l dir -d 'The directory to write them into' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand man" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand man" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand lookup" -l set -d 'Set file: a `type ...` line, then one element per line' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand lookup" -l keys -d 'Key file: one key per line (`192.0.2.7 . 1500`)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand lookup" -l classbench -d 'ClassBench rule file (`@SRC/LEN DST/LEN SP : SP DP : DP PROTO/MASK FLAGS/MASK`, flags ignored as rte_acl\'s test does)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand lookup" -l trace -d 'ClassBench trace file (`SRC DST SPORT DPORT PROTO ...`)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand lookup" -l delete -d 'Elements to delete after loading, before the lookups' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand lookup" -l impl -d 'Lookup implementation: scalar, avx2 or avx512 (default: MATCHER_IMPL, else the fastest this CPU runs)' -r
complete -c forwarder -n "__fish_forwarder_using_subcommand lookup" -l socket -d 'The running forwarder\'s control socket, instead of the one the configuration names (for the commands that talk to it)' -r -F
complete -c forwarder -n "__fish_forwarder_using_subcommand lookup" -l with-keys -d 'Print each answer after its key: `KEY -> ELEMENT` (or `-> nomatch`)'
complete -c forwarder -n "__fish_forwarder_using_subcommand lookup" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and not __fish_seen_subcommand_from run reload check stats neighbours trace capture route conntrack element completions man lookup help" -f -a "run" -d 'Forward packets; print rates once a second and a summary at the end'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and not __fish_seen_subcommand_from run reload check stats neighbours trace capture route conntrack element completions man lookup help" -f -a "reload" -d 'Make the running forwarder reload its configuration now'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and not __fish_seen_subcommand_from run reload check stats neighbours trace capture route conntrack element completions man lookup help" -f -a "check" -d 'Check a configuration without running it'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and not __fish_seen_subcommand_from run reload check stats neighbours trace capture route conntrack element completions man lookup help" -f -a "stats" -d 'Print the running forwarder\'s counters (JSON), or its rates'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and not __fish_seen_subcommand_from run reload check stats neighbours trace capture route conntrack element completions man lookup help" -f -a "neighbours" -d 'Print the running forwarder\'s neighbour table (JSON)'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and not __fish_seen_subcommand_from run reload check stats neighbours trace capture route conntrack element completions man lookup help" -f -a "trace" -d 'Explain what the pipeline does to a packet, stage by stage'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and not __fish_seen_subcommand_from run reload check stats neighbours trace capture route conntrack element completions man lookup help" -f -a "capture" -d 'Capture the running forwarder\'s frames as pcapng'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and not __fish_seen_subcommand_from run reload check stats neighbours trace capture route conntrack element completions man lookup help" -f -a "route" -d 'Show the running forwarder\'s routes: `get ADDR`, `list`'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and not __fish_seen_subcommand_from run reload check stats neighbours trace capture route conntrack element completions man lookup help" -f -a "conntrack" -d 'List, count or flush the running forwarder\'s tracked connections'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and not __fish_seen_subcommand_from run reload check stats neighbours trace capture route conntrack element completions man lookup help" -f -a "element" -d 'Add, delete or list a set\'s elements in the running forwarder'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and not __fish_seen_subcommand_from run reload check stats neighbours trace capture route conntrack element completions man lookup help" -f -a "completions" -d 'Print the shell completion script for bash, zsh, fish, elvish or powershell'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and not __fish_seen_subcommand_from run reload check stats neighbours trace capture route conntrack element completions man lookup help" -f -a "man" -d 'Write the manual pages (roff): forwarder(1) and one a command'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and not __fish_seen_subcommand_from run reload check stats neighbours trace capture route conntrack element completions man lookup help" -f -a "lookup" -d 'Classify keys from a file against a set file, without packets'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and not __fish_seen_subcommand_from run reload check stats neighbours trace capture route conntrack element completions man lookup help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and __fish_seen_subcommand_from route" -f -a "get" -d 'The route an address takes, as `ip route get`'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and __fish_seen_subcommand_from route" -f -a "list" -d 'List routes, as `ip route show`'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and __fish_seen_subcommand_from conntrack" -f -a "list" -d 'List the connections, as `conntrack -L`'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and __fish_seen_subcommand_from conntrack" -f -a "count" -d 'Count the connections, as `conntrack -C`'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and __fish_seen_subcommand_from conntrack" -f -a "flush" -d 'Forget every connection, as `conntrack -F`'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and __fish_seen_subcommand_from element" -f -a "add" -d 'Add elements (all or none)'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and __fish_seen_subcommand_from element" -f -a "delete" -d 'Delete elements by their exact key (all or none)'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and __fish_seen_subcommand_from element" -f -a "list" -d 'Print the set\'s elements in force, as `nft -n list set` does'
complete -c forwarder -n "__fish_forwarder_using_subcommand help; and __fish_seen_subcommand_from element" -f -a "reset" -d 'Set the element counters of a set (`counter = true`), or of every set, back to zero, as `nft reset set` and `nft reset counters`'
