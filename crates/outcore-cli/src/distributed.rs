//! The ranks of a distributed command (`run --engine pregel|nwsm`, `partition`): under `mpirun`
//! (feature `mpi`) this process is one rank of an MPI job; started alone it is on its own.
//! MPI is initialised here, once per process, and both commands share this code.

use std::sync::Arc;

use outcore::transport::Transport;

/// This process's transport under `mpirun`; `None` when it was started alone. MPI is
/// initialised here (once per process).
pub fn transport() -> anyhow::Result<Option<Arc<dyn Transport>>> {
    #[cfg(feature = "mpi")]
    if outcore::transport::MpiTransport::launched_by_mpirun() {
        return Ok(Some(Arc::new(outcore::transport::MpiTransport::init()?)));
    }
    #[cfg(not(feature = "mpi"))]
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some() {
        anyhow::bail!(outcore::Error::invalid(
            "started by mpirun, but this outcore was built without the `mpi` feature (cargo build --features mpi)"
        ));
    }
    Ok(None)
}

/// A failing rank ends the whole MPI job at once (with its error), instead of leaving the other
/// ranks waiting for it; returns `outcome` otherwise.
pub fn abort_on_error<T>(outcome: anyhow::Result<T>, transport: Option<&Arc<dyn Transport>>) -> anyhow::Result<T> {
    if let (Err(error), Some(t)) = (&outcome, transport) {
        if t.ranks() > 1 {
            let remote = outcore::Error::Remote { rank: Some(t.rank()), message: format!("{error:#}") };
            t.abort(error.downcast_ref::<outcore::Error>().unwrap_or(&remote));
        }
    }
    outcome
}
