//! Human-sized summaries of results: what a user wants to see after a run without opening
//! the output file (top PageRank vertices, component count and largest size, vertices reached).
//! The CLI prints them and writes them into `--stats-json` under `"summary"`; the demo's final
//! table is made from them.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use serde_json::{json, Map, Value};

use crate::algo::{AlgorithmResult, ValueColumn};
use crate::error::Result;
use crate::store::IdMap;

/// How many top vertices a float column's summary lists.
pub const TOP_K: usize = 10;

/// A float value ordered for a min-heap of the top k (NaN sorts lowest).
#[derive(PartialEq)]
struct Ranked(f64, u64);

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    // Reversed so that BinaryHeap (a max-heap) pops the smallest value first; ties favour
    // the smaller dense id staying in the top.
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.total_cmp(&self.0).then(self.1.cmp(&other.1))
    }
}

/// The [`TOP_K`] largest finite values (infinite ones, unreachable distances, are not "top"
/// vertices), in no particular order. A value enters the heap only when it beats the smallest
/// kept, so a column costs one comparison per value.
fn top_k(values: &[f64]) -> Vec<Ranked> {
    let mut heap = BinaryHeap::with_capacity(TOP_K + 1);
    for (v, &x) in values.iter().enumerate().filter(|(_, x)| x.is_finite()) {
        let ranked = Ranked(x, v as u64);
        if heap.len() == TOP_K && heap.peek().is_some_and(|worst| ranked >= *worst) {
            continue;
        }
        heap.push(ranked);
        if heap.len() > TOP_K {
            heap.pop();
        }
    }
    heap.into_vec()
}

/// How many distinct labels a column has, and the largest group (label, size), ties to the
/// smaller label.
struct Groups {
    count: u64,
    largest: Option<(u64, u64)>,
}

/// Counts the groups of `labels`.
fn group_sizes(labels: &[u64]) -> Groups {
    let better = |a: (u64, u64), b: Option<(u64, u64)>| match b {
        Some(b) => a.1 > b.1 || (a.1 == b.1 && a.0 < b.0),
        None => true,
    };
    // Labels that are vertex ids (the usual case) are counted in an array; the rest (a
    // parent column's "unreached" sentinel, labels of another id space) in a map.
    let mut dense = vec![0u64; labels.len()];
    let mut sparse: HashMap<u64, u64> = HashMap::new();
    for &label in labels {
        match dense.get_mut(label as usize) {
            Some(size) => *size += 1,
            None => *sparse.entry(label).or_default() += 1,
        }
    }
    let groups = dense.iter().enumerate().map(|(l, &s)| (l as u64, s)).chain(sparse);
    let (mut count, mut largest) = (0, None);
    for group in groups.filter(|&(_, s)| s > 0) {
        count += 1;
        if better(group, largest) {
            largest = Some(group);
        }
    }
    Groups { count, largest }
}

/// Summarises every column of a result, in original ids.
pub fn summarize(result: &AlgorithmResult, ids: &IdMap) -> Result<Map<String, Value>> {
    let mut summary = result.summary.clone();
    for (name, column) in &result.columns {
        let value = match column {
            ValueColumn::Hops(hops) => {
                // One pass, no copy: 2.4 M hops on RMAT-22.
                let (reached, max_depth) = hops
                    .iter()
                    .filter(|&&h| h != u64::MAX)
                    .fold((0u64, None), |(n, max): (u64, Option<u64>), &h| (n + 1, Some(max.map_or(h, |m| m.max(h)))));
                json!({
                    "vertices": hops.len(),
                    "reached": reached,
                    "max_depth": max_depth,
                })
            }
            ValueColumn::Float(values) => {
                let mut top = top_k(values);
                top.sort();
                let top: Result<Vec<Value>> =
                    top.iter().map(|r| Ok(json!({ "vertex": ids.original(r.1)?.to_string(), "value": r.0 }))).collect();
                let finite = values.iter().filter(|x| x.is_finite());
                json!({
                    "vertices": values.len(),
                    "sum": finite.clone().sum::<f64>(),
                    "infinite": values.iter().filter(|x| x.is_infinite()).count(),
                    "top": top?,
                })
            }
            ValueColumn::Label(labels) => {
                let groups = group_sizes(labels);
                let largest = groups.largest;
                json!({
                    "vertices": labels.len(),
                    "groups": groups.count,
                    "largest_size": largest.map(|(_, s)| s).unwrap_or(0),
                    "largest_label": match largest { Some((l, _)) => Some(ids.original(l)?.to_string()), None => None },
                })
            }
            ValueColumn::Count(counts) => json!({
                "vertices": counts.len(),
                "sum": counts.iter().sum::<u64>(),
                "max": counts.iter().max(),
            }),
        };
        // The algorithm's own figures win: tc's "triangles" (the number of triangles) must not
        // be overwritten by its column's summary (whose sum counts each triangle three times).
        let key = if summary.contains_key(name) { format!("{name}_per_vertex") } else { name.clone() };
        summary.insert(key, value);
    }
    Ok(summary)
}

/// One or two lines describing a summary for people.
pub fn describe(summary: &Map<String, Value>) -> Vec<String> {
    let mut lines = Vec::new();
    let scalars: Vec<String> =
        summary.iter().filter(|(_, v)| !v.is_object()).map(|(k, v)| format!("{k} = {v}")).collect();
    for (name, value) in summary.iter().filter(|(_, v)| v.is_object()) {
        let get = |k: &str| value.get(k).cloned().unwrap_or(Value::Null);
        if value.get("reached").is_some() {
            lines.push(format!(
                "{name}: reached {} of {} vertices, max depth {}",
                get("reached"),
                get("vertices"),
                get("max_depth")
            ));
        } else if let Some(top) = value.get("top").and_then(Value::as_array) {
            let list: Vec<String> = top
                .iter()
                .map(|t| {
                    format!("{} ({:.6e})", t["vertex"].as_str().unwrap_or("?"), t["value"].as_f64().unwrap_or(f64::NAN))
                })
                .collect();
            lines.push(format!("{name}: top {}: {}", list.len(), list.join(", ")));
        } else if value.get("groups").is_some() {
            lines.push(format!(
                "{name}: {} groups, the largest has {} vertices (label {})",
                get("groups"),
                get("largest_size"),
                get("largest_label").as_str().unwrap_or("-")
            ));
        } else if value.get("sum").is_some() {
            lines.push(format!("{name}: total {}, max {}", get("sum"), get("max")));
        } else {
            lines.push(format!("{name}: {value}"));
        }
    }
    if !scalars.is_empty() {
        lines.push(scalars.join(", "));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute_top(values: &[f64]) -> Vec<(u64, u64)> {
        let mut all: Vec<Ranked> =
            values.iter().enumerate().filter(|(_, x)| x.is_finite()).map(|(v, &x)| Ranked(x, v as u64)).collect();
        all.sort();
        all.truncate(TOP_K);
        all.iter().map(|r| (r.0.to_bits(), r.1)).collect()
    }

    proptest! {
        #[test]
        fn top_k_keeps_the_largest_values_ties_to_smaller_ids(
            values in proptest::collection::vec(prop_oneof![
                (0u8..6).prop_map(f64::from),
                Just(f64::INFINITY),
                any::<f64>(),
            ], 0..200)
        ) {
            let mut top = top_k(&values);
            top.sort();
            let top: Vec<(u64, u64)> = top.iter().map(|r| (r.0.to_bits(), r.1)).collect();
            prop_assert_eq!(top, brute_top(&values));
        }

        #[test]
        fn group_sizes_match_a_map_count(labels in proptest::collection::vec(0u64..40, 0..60), sparse in any::<bool>()) {
            let labels: Vec<u64> = if sparse { labels.iter().map(|l| l * 1_000_003).collect() } else { labels };
            let mut sizes: HashMap<u64, u64> = HashMap::new();
            for &l in &labels {
                *sizes.entry(l).or_default() += 1;
            }
            let expected = sizes.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))).map(|(&l, &s)| (l, s));
            let groups = group_sizes(&labels);
            prop_assert_eq!(groups.count, sizes.len() as u64);
            prop_assert_eq!(groups.largest, expected);
        }
    }
}
