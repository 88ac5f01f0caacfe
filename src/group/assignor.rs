//! The server-side assignors of KIP-848 consumer groups: `uniform` (the
//! default) and `range`, as named in Kafka's `group.consumer.assignors`.
//!
//! Both take every member's subscribed topics (by id), the partition count
//! of each subscribed topic, and the previous target assignment, and return
//! the new target. They are deterministic: the same inputs give the same
//! assignment.
//!
//! - `uniform` balances the number of partitions per member (they differ by
//!   at most one among members with the same subscription) and is sticky:
//!   a partition stays with its previous owner unless that breaks balance.
//!   Kafka uses two builders (homogeneous and heterogeneous subscriptions);
//!   this one algorithm covers both: keep what is still valid, hand out what
//!   is free to the least-loaded subscriber, then move partitions from the
//!   most- to the least-loaded member while they differ by more than one.
//! - `range` gives each member of a topic a contiguous range of its
//!   partitions, members in member-id order, the first `partitions %
//!   members` one partition more, as the client-side range assignor does.
//!
//! Pure: no I/O.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

/// Partitions by topic id.
pub type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// Work (member and partition visits) the balancing step of `uniform` may
/// do in one assignment, so that no input keeps the shard busy for long.
const BALANCE_WORK_MAX: usize = 20_000_000;

/// The assignors this broker offers, in Kafka's default order (the first is
/// the default).
pub const ASSIGNORS: &[&str] = &["uniform", "range"];

/// Computes the target assignment with assignor `name` (one of
/// [`ASSIGNORS`]; anything else is treated as `uniform`).
///
/// `subscriptions` maps each member to the topics it subscribes to;
/// `partitions` gives each topic's partition count (topics missing there are
/// ignored); `previous` is the last target assignment; `instance_ids` maps
/// static members to their instance ids (`range` puts them first, in
/// instance-id order, as Kafka's does).
pub fn assign(
    name: &str,
    subscriptions: &BTreeMap<String, BTreeSet<Uuid>>,
    partitions: &BTreeMap<Uuid, i32>,
    previous: &BTreeMap<String, Assignment>,
    instance_ids: &BTreeMap<String, String>,
) -> BTreeMap<String, Assignment> {
    match name {
        "range" => range(subscriptions, partitions, instance_ids),
        _ => uniform(subscriptions, partitions, previous),
    }
}

fn range(
    subscriptions: &BTreeMap<String, BTreeSet<Uuid>>,
    partitions: &BTreeMap<Uuid, i32>,
    instance_ids: &BTreeMap<String, String>,
) -> BTreeMap<String, Assignment> {
    let mut out: BTreeMap<String, Assignment> = subscriptions
        .keys()
        .map(|m| (m.clone(), Assignment::new()))
        .collect();
    // Static members first by instance id, then the others by member id.
    let mut ordered: Vec<&String> = subscriptions.keys().collect();
    ordered.sort_by_key(|m| match instance_ids.get(*m) {
        Some(instance) => (0, instance.as_str()),
        None => (1, m.as_str()),
    });
    for (&topic, &count) in partitions {
        let members: Vec<&String> = ordered
            .iter()
            .copied()
            .filter(|m| subscriptions[*m].contains(&topic))
            .collect();
        if members.is_empty() || count <= 0 {
            continue;
        }
        let n = members.len() as i32;
        let (quota, extra) = (count / n, count % n);
        let mut next = 0;
        for (i, member) in members.into_iter().enumerate() {
            let take = quota + i32::from((i as i32) < extra);
            if take > 0 {
                out.get_mut(member)
                    .expect("every subscriber has an entry")
                    .entry(topic)
                    .or_default()
                    .extend(next..next + take);
            }
            next += take;
        }
    }
    out
}

fn uniform(
    subscriptions: &BTreeMap<String, BTreeSet<Uuid>>,
    partitions: &BTreeMap<Uuid, i32>,
    previous: &BTreeMap<String, Assignment>,
) -> BTreeMap<String, Assignment> {
    let mut owned: BTreeMap<&str, BTreeSet<(Uuid, i32)>> = subscriptions
        .keys()
        .map(|m| (m.as_str(), BTreeSet::new()))
        .collect();
    let mut taken: BTreeSet<(Uuid, i32)> = BTreeSet::new();
    // 1. Keep every previous partition that still exists and is still
    //    subscribed (each partition by one member only).
    for (member, topics) in subscriptions {
        let Some(before) = previous.get(member) else {
            continue;
        };
        for (topic, set) in before {
            let Some(&count) = partitions.get(topic) else {
                continue;
            };
            if !topics.contains(topic) {
                continue;
            }
            for &p in set.iter().filter(|&&p| p >= 0 && p < count) {
                if taken.insert((*topic, p)) {
                    owned
                        .get_mut(member.as_str())
                        .expect("member")
                        .insert((*topic, p));
                }
            }
        }
    }
    // 2. Free partitions go to the least-loaded subscriber (ties: member id).
    for (&topic, &count) in partitions {
        let subscribers: Vec<&str> = subscriptions
            .iter()
            .filter(|(_, topics)| topics.contains(&topic))
            .map(|(m, _)| m.as_str())
            .collect();
        if subscribers.is_empty() {
            continue;
        }
        for p in 0..count.max(0) {
            if taken.contains(&(topic, p)) {
                continue;
            }
            let least = subscribers
                .iter()
                .min_by_key(|m| (owned[**m].len(), **m))
                .expect("not empty");
            owned.get_mut(*least).expect("member").insert((topic, p));
            taken.insert((topic, p));
        }
    }
    // 3. Balance: move from the most-loaded member to a less-loaded one that
    //    subscribes to one of the donor's topics, while counts differ by
    //    more than one. Each move lowers the spread, so at most one move
    //    per partition; the work is bounded too (beyond it the assignment
    //    stays valid, only less balanced).
    let mut moves_left = taken.len();
    let mut budget = BALANCE_WORK_MAX;
    'moves: while moves_left > 0 && budget > 0 {
        moves_left -= 1;
        let mut by_load: Vec<(&str, usize)> = owned.iter().map(|(m, s)| (*m, s.len())).collect();
        by_load.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        budget = budget.saturating_sub(by_load.len());
        for &(donor, donor_load) in &by_load {
            let donor_topics: BTreeSet<Uuid> = owned[donor].iter().map(|(t, _)| *t).collect();
            budget = budget.saturating_sub(donor_load);
            for &(taker, taker_load) in by_load.iter().rev() {
                if taker_load + 1 >= donor_load || budget == 0 {
                    break;
                }
                budget -= 1;
                let topics = &subscriptions[taker];
                if donor_topics.is_disjoint(topics) {
                    continue;
                }
                // The donor's highest partition the taker can have.
                let tp = *owned[donor]
                    .iter()
                    .rev()
                    .find(|(topic, _)| topics.contains(topic))
                    .expect("a shared topic");
                owned.get_mut(donor).expect("donor").remove(&tp);
                owned.get_mut(taker).expect("taker").insert(tp);
                continue 'moves;
            }
        }
        break;
    }
    owned
        .into_iter()
        .map(|(member, set)| {
            let mut assignment = Assignment::new();
            for (topic, p) in set {
                assignment.entry(topic).or_default().insert(p);
            }
            (member.to_string(), assignment)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assign4(
        name: &str,
        subscriptions: &BTreeMap<String, BTreeSet<Uuid>>,
        partitions: &BTreeMap<Uuid, i32>,
        previous: &BTreeMap<String, Assignment>,
    ) -> BTreeMap<String, Assignment> {
        assign(name, subscriptions, partitions, previous, &BTreeMap::new())
    }

    fn topic(n: u8) -> Uuid {
        Uuid::from_bytes([n; 16])
    }

    fn subs(members: &[(&str, &[u8])]) -> BTreeMap<String, BTreeSet<Uuid>> {
        members
            .iter()
            .map(|(m, ts)| (m.to_string(), ts.iter().map(|&t| topic(t)).collect()))
            .collect()
    }

    fn count(a: &Assignment) -> usize {
        a.values().map(BTreeSet::len).sum()
    }

    fn all_once(out: &BTreeMap<String, Assignment>, parts: &BTreeMap<Uuid, i32>) {
        let mut seen = BTreeSet::new();
        for a in out.values() {
            for (t, ps) in a {
                for p in ps {
                    assert!(seen.insert((*t, *p)), "assigned twice: {t} {p}");
                }
            }
        }
        let expected: usize = parts.values().map(|&c| c as usize).sum();
        assert_eq!(seen.len(), expected);
    }

    #[test]
    fn uniform_balances_and_is_sticky() {
        let parts: BTreeMap<Uuid, i32> = [(topic(1), 6), (topic(2), 3)].into();
        let one = subs(&[("a", &[1, 2])]);
        let first = assign4("uniform", &one, &parts, &BTreeMap::new());
        assert_eq!(count(&first["a"]), 9);
        let two = subs(&[("a", &[1, 2]), ("b", &[1, 2])]);
        let second = assign4("uniform", &two, &parts, &first);
        all_once(&second, &parts);
        let (ca, cb) = (count(&second["a"]), count(&second["b"]));
        assert!(ca.abs_diff(cb) <= 1, "{ca} {cb}");
        // Everything a kept was a's before.
        for (t, ps) in &second["a"] {
            assert!(ps.is_subset(&first["a"][t]));
        }
        // Stable inputs, stable output.
        assert_eq!(assign4("uniform", &two, &parts, &second), second);
        // b leaves: a gets everything back.
        let third = assign4("uniform", &one, &parts, &second);
        assert_eq!(count(&third["a"]), 9);
    }

    #[test]
    fn uniform_handles_different_subscriptions() {
        let parts: BTreeMap<Uuid, i32> = [(topic(1), 4), (topic(2), 4)].into();
        let s = subs(&[("a", &[1]), ("b", &[1, 2]), ("c", &[2])]);
        let out = assign4("uniform", &s, &parts, &BTreeMap::new());
        all_once(&out, &parts);
        assert!(out["a"].keys().all(|t| *t == topic(1)));
        assert!(out["c"].keys().all(|t| *t == topic(2)));
        let loads: Vec<usize> = out.values().map(count).collect();
        assert!(
            loads.iter().max().unwrap() - loads.iter().min().unwrap() <= 1,
            "{loads:?}"
        );
        // A topic nobody subscribes to and a missing topic are ignored.
        let parts3: BTreeMap<Uuid, i32> = [(topic(1), 2), (topic(3), 5)].into();
        let out = assign4(
            "uniform",
            &subs(&[("a", &[1, 9])]),
            &parts3,
            &BTreeMap::new(),
        );
        assert_eq!(out["a"], [(topic(1), BTreeSet::from([0, 1]))].into());
    }

    #[test]
    fn range_gives_contiguous_ranges_in_member_order() {
        let parts: BTreeMap<Uuid, i32> = [(topic(1), 5)].into();
        let out = assign4(
            "range",
            &subs(&[("b", &[1]), ("a", &[1])]),
            &parts,
            &BTreeMap::new(),
        );
        assert_eq!(out["a"][&topic(1)], BTreeSet::from([0, 1, 2]));
        assert_eq!(out["b"][&topic(1)], BTreeSet::from([3, 4]));
        let out = assign4(
            "range",
            &subs(&[("a", &[1]), ("b", &[1]), ("c", &[])]),
            &[(topic(1), 1)].into(),
            &BTreeMap::new(),
        );
        assert_eq!(count(&out["a"]), 1);
        assert!(out["b"].is_empty() && out["c"].is_empty());
        // Static members come first, in instance-id order.
        let statics: BTreeMap<String, String> = [("b".to_string(), "i0".to_string())].into();
        let out = assign(
            "range",
            &subs(&[("a", &[1]), ("b", &[1])]),
            &parts,
            &BTreeMap::new(),
            &statics,
        );
        assert_eq!(out["b"][&topic(1)], BTreeSet::from([0, 1, 2]));
    }
}
