use super::build::{pick_cuts, Padded};
use super::*;

#[test]
fn dims_project_wide_fields_onto_chunks() {
    let dims = Dim::of_fields(&[6, 2]);
    assert_eq!(dims.len(), 3);
    assert_eq!((dims[0].off, dims[0].len, dims[0].shift), (0, 4, 16));
    assert_eq!((dims[1].off, dims[1].len, dims[1].shift), (4, 2, 0));
    assert_eq!((dims[2].off, dims[2].len), (6, 2));
    // Same upper chunk: the lower chunk's range is exact.
    assert_eq!(
        dims[1].project(0x0102_0304_0010, 0x0102_0304_0020),
        (0x10, 0x20)
    );
    // Upper chunks differ: the lower chunk can be anything.
    assert_eq!(
        dims[1].project(0x0102_0304_0010, 0x0102_0305_0020),
        (0, 0xffff)
    );
    assert_eq!(
        dims[0].project(0x0102_0304_0010, 0x0102_0305_0020),
        (0x0102_0304, 0x0102_0305)
    );
}

/// 300 elements narrow in the first dimension, and two groups of `wide`
/// narrow only in the second or only in the third.
fn anchored(wide: u32) -> Vec<Entry> {
    let any = (0, 0xffff);
    (0..300u32)
        .map(|i| (vec![(i * 1000, i * 1000 + 9), any, any], i))
        .chain((0..wide).map(|i| (vec![(0, u32::MAX), (i * 100, i * 100 + 1), any], 300 + i)))
        .chain((0..wide).map(|i| (vec![(0, u32::MAX), any, (i * 7, i * 7 + 3)], 300 + wide + i)))
        .map(|(ranges, id)| Entry {
            id,
            rank: id as u64,
            ranges,
        })
        .collect()
}

#[test]
fn small_anchor_groups_share_a_tree() {
    let dims = Dim::of_fields(&[4, 2, 2]);
    // Sixty wide elements would be copied into every leaf of the large
    // tree: the two small groups share a tree of their own.
    let mut all = anchored(30);
    let t = Cuts::build_forest(&dims, true, &all, true, &[]);
    assert_eq!(t.roots.len(), 2);
    assert_eq!(t.plan(), &[0b001, 0b110]);
    // A rebuild with the plan merges the same anchors without trials,
    // and gives an anchor the plan does not name a tree of its own.
    assert_eq!(
        Cuts::build_forest(&dims, true, &all, true, &[0b110])
            .roots
            .len(),
        2
    );
    assert_eq!(
        Cuts::build_forest(&dims, true, &all, true, &[0b011]).plan(),
        &[0b011, 0b100]
    );
    // Twenty-four are few enough for the large tree to take them in:
    // one tree, where the model counts a tree more than their copies.
    let few = Cuts::build_forest(&dims, true, &anchored(12), true, &[]);
    assert_eq!(few.plan(), &[0b111]);
    assert!(few.entries > 324 && few.refs_valid());
    // Without the small groups there is nothing to merge.
    all.truncate(300);
    assert_eq!(
        Cuts::build_forest(&dims, true, &all, true, &[]).roots.len(),
        1
    );
}

#[test]
fn cuts_are_distinct_and_at_most_fifteen() {
    let ends: Vec<u32> = (0..1000).map(|i| i / 3).collect();
    let p = pick_cuts(&ends);
    let c = p.cuts();
    assert!(c.len() <= MAX_CUTS && c.windows(2).all(|w| w[0] < w[1]));
    assert!(p.cuts[p.len..].iter().all(|&x| x == u32::MAX));
    assert_eq!(pick_cuts(&[5, 5, 9]).cuts(), [5, 9]);
    let many: Vec<u32> = (0..16).collect();
    assert_eq!(pick_cuts(&many).len, MAX_CUTS);
}

/// The build's fixed-step search agrees with a binary search over the
/// cuts themselves, for every count of cuts, at and around each cut
/// and at the ends of the value range (a cut may be `u32::MAX`).
#[test]
fn padded_rank_is_partition_point() {
    for len in 0..=MAX_CUTS {
        for top in [1000, u32::MAX] {
            let cuts: Vec<u32> = (0..len as u32)
                .map(|i| if i + 1 == len as u32 { top } else { 7 * i + 3 })
                .collect();
            let p = Padded::new(&cuts);
            let mut xs = vec![0, 1, 999, 1000, 1001, u32::MAX - 1, u32::MAX];
            for &c in &cuts {
                xs.extend([c.saturating_sub(1), c, c.saturating_add(1)]);
            }
            for x in xs {
                assert_eq!(p.rank(x), cuts.partition_point(|&c| c <= x), "{cuts:?} {x}");
            }
        }
    }
}

#[test]
fn groups_keep_their_words_when_settled() {
    // Leaves of every width (5 dimensions, 2 of them stored as words:
    // 512 bytes a group of 16), small groups and groups past `HUGE_FROM`.
    let (dims, word_dims) = (5, 2);
    let entries: Vec<Entry> = (0..40u32)
        .map(|i| Entry {
            id: i,
            rank: i as u64,
            ranges: (0..dims as u32)
                .map(|d| (i * 10 + d, i * 10 + d + 7))
                .collect(),
        })
        .collect();
    for bytes in [100_000, HUGE_FROM + pages::HUGE / 2] {
        let mut groups = Groups::default();
        let mut leaves = Vec::new();
        while groups.words().len() * 4 < bytes {
            let k = leaves.len();
            let n = [1, 3, 4, 5, 8, 9, 16, 17, 40][k % 9];
            leaves.push(groups.push_entries(
                (dims, word_dims),
                n,
                |i| &entries[i],
                |i| (k * 64 + i) as u32,
            ));
        }
        let built = groups.words().to_vec();
        groups.settle();
        let words = groups.words();
        assert_eq!(words, &built[..]);
        assert_eq!(words.len(), groups.len.div_ceil(LANES) * LANES);
        let lane = lane_words(dims, word_dims);
        assert!(leaves.iter().all(|l| l.fits(words.len(), lane)));
        // A leaf's lanes: its tags, then its elements' rows.
        assert_eq!(words[leaves[8].start as usize], 8 * 64);
        let huge = bytes >= HUGE_FROM;
        assert_eq!(groups.huge.is_some(), huge, "{bytes}");
        if huge {
            // Whole huge pages, aligned to one: what `memory_usage` says.
            assert_eq!(words.as_ptr() as usize % pages::HUGE, 0);
            assert_eq!(groups.memory_usage() % pages::HUGE, 0);
            assert!(groups.blocks.is_empty());
        } else {
            assert!(groups.memory_usage() >= words.len() * 4);
        }
        // Settling again changes nothing.
        groups.settle();
        assert_eq!(groups.words(), &built[..]);
    }
}

/// A forest's later tree is skipped for a burst only where every key's
/// answer ranks before the tree's first element: elements narrow in the first
/// dimension (ranked first, bar a few) and as many narrow in the second,
/// every tenth of them ranked before the first group's later half;
/// bursts whose keys all match the first group early, bursts mixing such
/// keys with keys that only the second holds or that it holds better.
/// Every answer is the linear scan's, one key at a time and in bursts.
#[test]
fn forest_trees_skipped_only_below_every_answer() {
    let dims = Dim::of_fields(&[4, 2, 2]);
    let any = (0, 0xffff);
    let mut all: Vec<Entry> = (0..400u32)
        .map(|i| (vec![(i * 1000, i * 1000 + 9), any, any], 10 * i as u64))
        .chain((0..400u32).map(|i| {
            let rank = if i % 10 == 0 {
                2_001 + 5 * i as u64
            } else {
                5_000 + i as u64
            };
            (vec![(0, u32::MAX), (i * 150, i * 150 + 49), any], rank)
        }))
        .enumerate()
        .map(|(id, (ranges, rank))| Entry {
            id: id as u32,
            rank,
            ranges,
        })
        .collect();
    all.sort_by_key(|e| e.rank);
    let tree = Cuts::build_forest(&dims, true, &all, true, &[]);
    assert_eq!(tree.roots.len(), 2);
    assert_eq!(tree.firsts[1], 201);
    // Both trees' tops cut only their anchors: keys go through them
    // without a test for leaves.
    assert!(
        tree.prefix[0] >= 2 && tree.prefix[1] >= 2,
        "{:?}",
        tree.prefix
    );
    let c = Classifier::new(std::sync::Arc::new(tree), Vec::new(), &[]);
    let key = |a: u32, p: u16| {
        let mut k = a.to_be_bytes().to_vec();
        k.extend(p.to_be_bytes());
        k.extend(7u16.to_be_bytes());
        k
    };
    let want = |k: &[u8]| {
        let v = [
            u32::from_be_bytes([k[0], k[1], k[2], k[3]]),
            u16::from_be_bytes([k[4], k[5]]) as u32,
            7,
        ];
        first_holding(&all, &v)
    };
    let mut bursts: Vec<Vec<Vec<u8>>> = Vec::new();
    // Every key in the first group's early elements, each also in a
    // second-group element ranked after: the second tree is skipped.
    bursts.push((0..BURST as u32).map(|j| key(j * 1000 + 3, 150)).collect());
    // The same with one key that only the second group holds.
    let mut one = bursts[0].clone();
    one[17] = key(999_999_999, 1205);
    bursts.push(one);
    // Keys in late first-group elements, half of them also in an early
    // second-group element (every tenth: ports 0..49, 1500..1549, ...),
    // half in a late one.
    let late = |j: u32| {
        key(
            (300 + j) * 1000 + 5,
            if j.is_multiple_of(2) { 20 } else { 1205 },
        )
    };
    bursts.push((0..BURST as u32).map(late).collect());
    // Early first-group keys and those, alternating.
    bursts.push(
        (0..BURST as u32)
            .map(|j| {
                if j % 2 == 0 {
                    key(j * 1000 + 3, 150)
                } else {
                    late(j)
                }
            })
            .collect(),
    );
    // And no key in any element.
    bursts.push(
        (0..BURST as u32)
            .map(|j| key(j * 1000 + 500, 150))
            .collect(),
    );
    let held: usize = bursts.iter().map(|b| agree(&c, b, want)).sum();
    assert!(held >= 3 * BURST, "{held}");
}

/// The levels a key goes through without a test for leaves end at the
/// first leaf or node of another dimension on any path, and a tree that
/// claims more fails its check.
#[test]
fn same_dim_prefix_ends_at_a_leaf_or_another_dimension() {
    let dims = Dim::of_fields(&[4, 2, 2]);
    let any = (0, 0xffff);
    let all: Vec<Entry> = (0..400u32)
        .map(|i| Entry {
            id: i,
            rank: i as u64,
            ranges: vec![(i * 1000, i * 1000 + 9), any, any],
        })
        .collect();
    let t = Cuts::build_forest(&dims, true, &all, false, &[]);
    let root = t.roots[0];
    let k = t.same_dim_depth(root);
    assert!(k >= 2 && t.prefix == [k as u8], "{k} {:?}", t.prefix);
    assert!(t.refs_valid());
    let i = (root >> NODE_SHIFT) as usize;
    // A leaf among the root's children.
    let mut leaf = t.clone();
    leaf.nodes[i].child[3] = LEAF;
    assert_eq!(leaf.same_dim_depth(root), 1);
    assert!(!leaf.refs_valid());
    // A child cutting the second dimension.
    let mut other = t.clone();
    other.nodes[i].child[0] = other.nodes[i].child[0] & !DIM_BITS | 2;
    assert_eq!(other.same_dim_depth(root), 1);
    // A root that is a leaf.
    assert_eq!(t.same_dim_depth(LEAF), 0);
}

/// Every packed layout, and every layout of words up to six dimensions,
/// has a form of the burst of its own (the rows' offsets constant).
#[test]
fn packed_layouts_have_a_form_of_their_own() {
    for rows in PACKED.into_iter().chain((1..=6).map(|n| (n, n))) {
        assert!(Classifier::has_own_form(rows), "{rows:?}");
    }
    // The IPv4 5-tuple's ports and protocol are halves; a port before an
    // address keeps words; a MAC's last two bytes are a 16-bit chunk;
    // layouts without a form of their own keep words.
    assert_eq!(word_dims(&Dim::of_fields(&[4, 4, 2, 2, 1])), 2);
    assert_eq!(word_dims(&Dim::of_fields(&[2, 4])), 2);
    assert_eq!(word_dims(&Dim::of_fields(&[4, 2])), 1);
    assert_eq!(word_dims(&Dim::of_fields(&[6])), 1);
    assert_eq!(word_dims(&Dim::of_fields(&[16])), 4);
    assert_eq!(word_dims(&Dim::of_fields(&[4, 2, 2, 2, 2, 1])), 6);
}

/// A tree whose leaves hold few values of a dimension keeps sieves of it:
/// addresses in blocks of ten elements, each element one port of 200 (or
/// six ports from it). Keys whose port is in no element of their leaf
/// skip it (48 of these 1,280: the tree cuts ports too), and every answer
/// is the linear scan's, in bursts and one by one, with and without
/// elements inserted beside the tree.
#[test]
fn sieves_skip_leaves_without_the_keys_value() {
    let dims = Dim::of_fields(&[4, 2]);
    let port = |i: u32| 1000 + (i * 37) % 200 * 7;
    let all: Vec<Entry> = (0..3000u32)
        .map(|i| Entry {
            id: i,
            rank: i as u64,
            // Every third element a few ports from its own.
            ranges: vec![
                ((i / 10) * 1000, (i / 10) * 1000 + 999),
                (port(i), port(i) + if i.is_multiple_of(3) { 5 } else { 0 }),
            ],
        })
        .collect();
    let t = Cuts::build(dims.clone(), true, all.clone(), None, &[]);
    assert_eq!(t.sieve_dim, [1], "{:?}", t.plan);
    assert!(t.refs_valid());
    let key = |a: u32, p: u32| {
        let mut k = a.to_be_bytes().to_vec();
        k.extend((p as u16).to_be_bytes());
        k.extend([0, 0]);
        k
    };
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let keys: Vec<Vec<u8>> = (0..BURST * 40)
        .map(|j| {
            let r = next();
            let i = (r % 3000) as u32;
            // Half the keys in an element's block with its own port, the
            // rest with any port of the pool.
            let p = if j % 2 == 0 {
                port(i)
                    + if i.is_multiple_of(3) {
                        (r >> 40) as u32 % 6
                    } else {
                        0
                    }
            } else {
                port((r >> 32) as u32 % 200)
            };
            key((i / 10) * 1000 + (r >> 20) as u32 % 1000, p)
        })
        .collect();
    // Some keys' leaves hold no element of their port.
    let sieved = keys
        .iter()
        .filter(|k| {
            let mut vals = [0u32; MAX_DIMS];
            vals[0] = u32::from_be_bytes([k[0], k[1], k[2], k[3]]);
            vals[1] = u16::from_be_bytes([k[4], k[5]]) as u32;
            let mut r = t.roots[0];
            while r & LEAF == 0 {
                r = t.child(r, &vals, pick_scalar);
            }
            t.sieves[(r & !LEAF) as usize] >> sieve_bit(vals[1]) & 1 == 0
        })
        .count();
    assert!(sieved >= 20, "{sieved} of {}", keys.len());
    let tree = std::sync::Arc::new(t);
    let extra = vec![
        Entry {
            id: 5000,
            rank: 5,
            ranges: vec![(0, u32::MAX), (port(7), port(7))],
        },
        Entry {
            id: 5001,
            rank: 1500,
            ranges: vec![(0, 1_000_000), (0, 0xffff)],
        },
    ];
    let mut held = 0;
    for extra in [Vec::new(), extra] {
        let mut every = all.clone();
        every.extend(extra.iter().cloned());
        every.sort_by_key(|e| e.rank);
        let c = Classifier::new(tree.clone(), extra, &[]);
        let want = |k: &[u8]| {
            let v = [
                u32::from_be_bytes([k[0], k[1], k[2], k[3]]),
                u16::from_be_bytes([k[4], k[5]]) as u32,
            ];
            first_holding(&every, &v)
        };
        held += keys
            .chunks(BURST)
            .map(|b| agree(&c, b, want))
            .sum::<usize>();
    }
    assert!(held >= keys.len() / 2, "{held}");
}

/// Elements of exact sets need no full check.
struct Exact;

impl Verify for Exact {
    fn holds(&self, _: u32, _: &[u8]) -> bool {
        true
    }
}

/// Asserts that every key of `burst` (keys of 8 bytes, at most
/// [`BURST`]) gets `want`'s answer from `c`, in a burst and alone;
/// returns how many have one.
fn agree(c: &Classifier, burst: &[Vec<u8>], want: impl Fn(&[u8]) -> Option<u32>) -> usize {
    let flat: Vec<u8> = burst.iter().flatten().copied().collect();
    let mut out = [None; BURST];
    c.burst((&flat, 8), &mut out, &Exact, pick_scalar, mask_scalar, None);
    let mut held = 0;
    for (k, got) in burst.iter().zip(out) {
        let w = want(k);
        assert_eq!(got, w, "key {k:?}");
        assert_eq!(c.lookup(k, &Exact, pick_scalar, mask_scalar), w);
        held += w.is_some() as usize;
    }
    held
}

/// The id of the first of `all` (in rank order) whose ranges hold `v`:
/// the linear scan.
fn first_holding(all: &[Entry], v: &[u32]) -> Option<u32> {
    all.iter()
        .find(|e| {
            e.ranges
                .iter()
                .zip(v)
                .all(|(&(lo, hi), &x)| lo <= x && x <= hi)
        })
        .map(|e| e.id)
}
