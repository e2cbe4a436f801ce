//! Result files (writers to come). [`sink`] holds the file handling shared with the edge-list
//! writers of `generate`.

pub mod sink;
