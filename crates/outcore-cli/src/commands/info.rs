//! `outcore info`: what a store holds.

use std::path::PathBuf;

use clap::Args;
use outcore::runtime::format_size;
use outcore::store::{Direction, Store};
use serde_json::json;

#[derive(Args)]
pub struct InfoArgs {
    /// The store directory.
    #[arg(long)]
    store: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Check every file's full checksum, not only sizes and small files.
    #[arg(long)]
    verify: bool,
    /// Compute the BASC paper's ordering cost model Σ_v indeg(v)·variance(ids of v's
    /// out-neighbours) (one pass over csr-out), and its value relative to a random order.
    #[arg(long)]
    order_cost: bool,
}

/// Degree statistics of one direction, computed from the offsets file in one pass.
struct DegreeStats {
    max: u64,
    mean: f64,
    zero: u64,
}

fn degree_stats(store: &Store, direction: Direction) -> outcore::Result<DegreeStats> {
    let csr = store.csr(direction)?;
    let n = csr.vertices;
    let (mut max, mut zero) = (0u64, 0u64);
    let chunk = 1 << 16;
    let mut buf = vec![0u64; chunk + 1];
    let mut first = 0u64;
    while first < n {
        let count = (chunk as u64).min(n - first) as usize;
        csr.read_offsets(first, &mut buf[..count + 1])?;
        for w in buf[..count + 1].windows(2) {
            let d = w[1] - w[0];
            max = max.max(d);
            zero += (d == 0) as u64;
        }
        first += count as u64;
    }
    let mean = if n == 0 { 0.0 } else { csr.arcs as f64 / n as f64 };
    Ok(DegreeStats { max, mean, zero })
}

pub fn run(args: InfoArgs) -> anyhow::Result<()> {
    let store = Store::open(&args.store)?;
    if args.verify {
        store.verify()?;
    }
    let m = store.manifest();
    let out = degree_stats(&store, Direction::Out)?;
    let inn = degree_stats(&store, Direction::In)?;
    let layouts: serde_json::Map<String, serde_json::Value> =
        m.layouts.iter().map(|(name, l)| (name.clone(), json!(l.bytes))).collect();
    let info = json!({
        "store": args.store.display().to_string(),
        "vertices": m.vertices,
        "edges": m.edges,
        "arcs": m.arcs,
        "directed": m.directed,
        "weights": m.weights.map(|_| "f64"),
        "id_type": m.id_type,
        "orderings": m.orderings,
        "out_degree": { "max": out.max, "mean": out.mean, "zero": out.zero },
        "in_degree": { "max": inn.max, "mean": inn.mean, "zero": inn.zero },
        "layout_bytes": layouts,
        "verified": args.verify,
    });
    let mut info = info;
    if args.order_cost {
        let cost = outcore::store::order::order_cost(&store)?;
        info["order_cost"] = json!({ "cost": cost.cost, "normalized": cost.normalized });
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
        return Ok(());
    }
    println!("store       {}", args.store.display());
    println!("vertices    {}", m.vertices);
    println!("edges       {} ({} stored arcs)", m.edges, m.arcs);
    println!("directed    {}", if m.directed { "yes" } else { "no (both directions stored)" });
    println!("weights     {}", if m.weights.is_some() { "f64" } else { "none" });
    println!("ids         {}", serde_json::to_value(m.id_type)?.as_str().unwrap_or("?"));
    println!("orderings   {}", if m.orderings.is_empty() { "none (input order)".to_string() } else { m.orderings.join(", ") });
    println!("out-degree  max {}, mean {:.2}, zero-degree vertices {}", out.max, out.mean, out.zero);
    println!("in-degree   max {}, mean {:.2}, zero-degree vertices {}", inn.max, inn.mean, inn.zero);
    for (name, layout) in &m.layouts {
        let per_edge = if m.arcs > 0 { layout.bytes as f64 / m.arcs as f64 } else { 0.0 };
        println!("layout      {name:<10} {:>12} ({per_edge:.2} bytes per arc)", format_size(layout.bytes));
    }
    if args.verify {
        println!("checksums   all files verified");
    }
    if let Some(cost) = info.get("order_cost") {
        println!(
            "order cost  {:.6e} (Σ indeg·variance of neighbour ids; {:.4} of a random order's)",
            cost["cost"].as_f64().unwrap_or(0.0),
            cost["normalized"].as_f64().unwrap_or(0.0)
        );
    }
    Ok(())
}
