//! `outcore algorithms`: every algorithm, what it computes and its parameters with their
//! defaults, and which engines run it — the matrix is generated from the code
//! (`outcore::algo::support`), not written by hand.

use clap::Args;
use outcore::algo::support::support_matrix;

#[derive(Args)]
pub struct AlgorithmsArgs {}

pub fn run(_args: AlgorithmsArgs) -> anyhow::Result<()> {
    let matrix = support_matrix()?;
    let Some(first) = matrix.first() else { return Ok(()) };
    print!("{:<10}", "algorithm");
    for (engine, _) in &first.engines {
        print!(" {:<7}", engine.name());
    }
    println!(" forms (first preferred)");
    for row in &matrix {
        print!("{:<10}", row.name);
        for (_, runs) in &row.engines {
            print!(" {:<7}", if *runs { "yes" } else { "-" });
        }
        let forms: Vec<String> = row
            .forms
            .iter()
            .map(|f| {
                format!(
                    "{}{}",
                    f.form.name(),
                    if f.wire && f.form != outcore::engine::planner::ProgramForm::Neighborhood {
                        " (wire)"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        println!(" {}", forms.join(" | "));
    }
    println!();
    for row in &matrix {
        println!("{:<10} {}", row.name, row.description);
    }
    println!();
    println!("`--engine auto` (the default) picks the fastest engine expected within --memory; `--explain` prints its table.");
    Ok(())
}
