//! The in-memory reference engine (placeholder while the foundation is built).
use crate::error::{Error, Result};
use crate::program::{PregelProgram, VertexProgram};
use crate::store::Store;
use super::Runner;

pub fn estimated_memory_bytes(store: &Store) -> u64 {
    (store.num_vertices() + 1) * 8 * 2 + store.num_arcs() * 8 * 2
}

pub fn run_vertex_program<P: VertexProgram>(_runner: &Runner, _program: &P) -> Result<Vec<P::Value>> {
    Err(Error::invalid("not yet"))
}

pub fn run_pregel<P: PregelProgram>(_runner: &Runner, _program: &P) -> Result<Vec<P::Value>> {
    Err(Error::invalid("not yet"))
}
