//! What changed between two lists of a set's elements: the elements only
//! the old one has and those only the new one has. Edits keep most of a
//! file in place, so the common head and tail are matched in order first
//! (a sequential compare, cheap where hashing scattered elements is
//! not), and only the middle is compared as sets.

use matcher::Element;
use std::collections::HashSet;

/// The elements of `old` not in `new` (removed) and of `new` not in
/// `old` (added), each in its list's order; neither list holds an element
/// twice (a checked set's elements never do).
pub fn diff_elements<'a>(
    old: &'a [Element],
    new: &'a [Element],
) -> (Vec<&'a Element>, Vec<&'a Element>) {
    let head = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let (old, new) = (&old[head..], &new[head..]);
    let tail = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (old, new) = (&old[..old.len() - tail], &new[..new.len() - tail]);
    if old.is_empty() || new.is_empty() {
        return (old.iter().collect(), new.iter().collect());
    }
    let in_old: HashSet<&Element> = old.iter().collect();
    let in_new: HashSet<&Element> = new.iter().collect();
    (
        old.iter().filter(|e| !in_new.contains(e)).collect(),
        new.iter().filter(|e| !in_old.contains(e)).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use matcher::SetDecl;
    use routecache::gen::Rng;
    use std::collections::BTreeSet;

    fn els(ports: &[u16]) -> Vec<Element> {
        let d = SetDecl::parse("inet_service").unwrap();
        ports
            .iter()
            .map(|p| d.parse_element(&p.to_string()).unwrap())
            .collect()
    }

    /// Against the definition (set differences), on random edits.
    #[test]
    fn agrees_with_set_differences() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut next = |n: u64| rng.below(n);
        for _ in 0..2000 {
            let mut a: Vec<u16> = Vec::new();
            for _ in 0..next(30) {
                let v = next(40) as u16;
                if !a.contains(&v) {
                    a.push(v);
                }
            }
            let mut b = a.clone();
            for _ in 0..next(4) {
                match next(3) {
                    0 if !b.is_empty() => {
                        let i = next(b.len() as u64) as usize;
                        b.remove(i);
                    }
                    1 => {
                        let v = next(40) as u16;
                        if !b.contains(&v) {
                            let i = next(b.len() as u64 + 1) as usize;
                            b.insert(i, v);
                        }
                    }
                    _ => b.reverse(),
                }
            }
            let (ea, eb) = (els(&a), els(&b));
            let (removed, added) = diff_elements(&ea, &eb);
            let sa: BTreeSet<u16> = a.iter().copied().collect();
            let sb: BTreeSet<u16> = b.iter().copied().collect();
            let key = |e: &&Element| e.key[0].start as u16;
            let got_r: BTreeSet<u16> = removed.iter().map(key).collect();
            let got_a: BTreeSet<u16> = added.iter().map(key).collect();
            assert_eq!(got_r, &sa - &sb, "{a:?} -> {b:?}");
            assert_eq!(got_a, &sb - &sa, "{a:?} -> {b:?}");
        }
    }
}
