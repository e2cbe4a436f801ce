//! LDBC Graphalytics graphs: `NAME.v` (one vertex id per line), `NAME.e` (`src dst [props]`)
//! and `NAME.properties` (Java properties saying which files, whether the graph is directed and
//! which edge properties the `.e` columns hold).
//!
//! A graph may be given as its `.properties` file, as the `.v` and `.e` files (two inputs), or
//! as the `.e` file alone with the `.v` beside it. The `.v` file is read first and every line
//! becomes a [`InputRecord::Vertex`](crate::ingest::InputRecord::Vertex): Graphalytics graphs
//! have isolated vertices that appear in no edge, and they must survive the import.
//!
//! Two published validation graphs name their vertex file as their edge file
//! (`graph.NAME.edge-file = NAME.v`). Reading ids as edges would fail on the first line, so
//! when the edge file is the vertex file and `NAME.e` exists beside it, that file is read and
//! the format description says so.

use std::path::{Path, PathBuf};

use super::{logical_extension, logical_name, FileJob, Plan};
use crate::error::{Error, Result};
use crate::ingest::ImportOptions;

/// Properties files are a few hundred bytes; anything this large is not one.
const MAX_PROPERTIES_BYTES: u64 = 4 << 20;
/// The default weight column of `.e` files (0-based): `src dst weight`.
const DEFAULT_WEIGHT_FIELD: usize = 2;

pub(super) fn plan(
    index: usize,
    inputs: &[PathBuf],
    taken: &mut [bool],
    opts: &ImportOptions,
    reason: &str,
) -> Result<Plan> {
    let path = &inputs[index];
    match logical_extension(path).as_str() {
        "properties" => plan_from_properties(path, opts, reason),
        "v" | "e" => plan_from_pair(index, inputs, taken, opts, reason),
        other => Err(Error::input(
            path,
            None,
            format!(
                "Graphalytics input must be a .properties file or a .v/.e file, not {}",
                if other.is_empty() {
                    "a file without extension".to_string()
                } else {
                    format!("a .{other} file")
                }
            ),
        )),
    }
}

/// One `key = value` of a properties file, with its line for messages.
struct Property {
    key: String,
    value: String,
    line: u64,
}

/// Reads a Java properties file: `key = value`, `key: value` or `key value`; `#`/`!` comments;
/// a trailing backslash continues the value on the next line.
fn read_properties(path: &Path) -> Result<Vec<Property>> {
    let size = std::fs::metadata(path)
        .map_err(|e| Error::input(path, None, format!("cannot read properties file: {e}")))?
        .len();
    if size > MAX_PROPERTIES_BYTES {
        return Err(Error::input(
            path,
            None,
            format!("is {size} bytes: too large for a Graphalytics .properties file"),
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::input(path, None, format!("cannot read properties file: {e}")))?;
    let mut properties = Vec::new();
    let mut pending: Option<(String, u64)> = None;
    for (index, raw_line) in text.lines().enumerate() {
        let line_number = index as u64 + 1;
        let (mut logical, start_line) = match pending.take() {
            Some((so_far, start)) => (so_far + raw_line.trim_start(), start),
            None => {
                let trimmed = raw_line.trim_start();
                if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
                    continue;
                }
                (trimmed.to_string(), line_number)
            }
        };
        let trailing_backslashes = logical.chars().rev().take_while(|&c| c == '\\').count();
        if trailing_backslashes % 2 == 1 {
            logical.pop();
            pending = Some((logical, start_line));
            continue;
        }
        let key_end = logical
            .find(|c: char| c == '=' || c == ':' || c.is_whitespace())
            .unwrap_or(logical.len());
        let key = logical[..key_end].to_string();
        let mut value = logical[key_end..].trim_start();
        if let Some(rest) = value.strip_prefix(['=', ':']) {
            value = rest.trim_start();
        }
        properties.push(Property {
            key,
            value: value.trim_end().to_string(),
            line: start_line,
        });
    }
    if let Some((logical, start_line)) = pending {
        properties.push(Property {
            key: logical,
            value: String::new(),
            line: start_line,
        });
    }
    Ok(properties)
}

/// What a `.properties` file says about one graph.
struct GraphProperties {
    name: String,
    properties: Vec<Property>,
    path: PathBuf,
}

impl GraphProperties {
    fn read(path: &Path) -> Result<GraphProperties> {
        let properties = read_properties(path)?;
        let mut names: Vec<&str> = Vec::new();
        for p in &properties {
            let name = p.key.strip_prefix("graph.").and_then(|k| {
                k.strip_suffix(".edge-file")
                    .or_else(|| k.strip_suffix(".vertex-file"))
            });
            if let Some(name) = name {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        let stem = file_stem(path, "properties");
        let name = match names.as_slice() {
            [] => {
                return Err(Error::input(
                    path,
                    None,
                    "no 'graph.NAME.edge-file' entry: not a Graphalytics graph description",
                ))
            }
            [only] => only.to_string(),
            several => match several.iter().find(|n| **n == stem) {
                Some(n) => n.to_string(),
                None => {
                    return Err(Error::input(
                        path,
                        None,
                        format!(
                            "describes several graphs ({}) and none is named after the file",
                            several.join(", ")
                        ),
                    ))
                }
            },
        };
        Ok(GraphProperties {
            name,
            properties,
            path: path.to_path_buf(),
        })
    }

    /// The value of `graph.NAME.<suffix>`, with its line.
    fn get(&self, suffix: &str) -> Option<(&str, u64)> {
        let key = format!("graph.{}.{suffix}", self.name);
        self.properties
            .iter()
            .rev()
            .find(|p| p.key == key)
            .map(|p| (p.value.as_str(), p.line))
    }

    fn directed(&self) -> Result<Option<bool>> {
        match self.get("directed") {
            None => Ok(None),
            Some((value, line)) => match value.to_ascii_lowercase().as_str() {
                "true" => Ok(Some(true)),
                "false" => Ok(Some(false)),
                _ => Err(Error::input(
                    &self.path,
                    Some(line),
                    format!(
                        "graph.{}.directed must be true or false, not '{value}'",
                        self.name
                    ),
                )),
            },
        }
    }

    /// The 0-based `.e` column of the weight, if the edges declare one: the edge properties
    /// follow `src dst` in the order of `edge-properties.names`.
    fn weight_field(&self) -> Option<usize> {
        let (names, _) = self.get("edge-properties.names")?;
        let weight_name = self
            .get("sssp.weight-property")
            .map_or("weight", |(name, _)| name);
        names
            .split(',')
            .map(str::trim)
            .position(|n| n == weight_name)
            .map(|p| 2 + p)
    }

    /// A data file named by `graph.NAME.<key>`, relative to the properties file; it must exist.
    fn data_file(&self, key: &str, what: &str) -> Result<(PathBuf, String, u64)> {
        let Some((value, line)) = self.get(key) else {
            return Err(Error::input(
                &self.path,
                None,
                format!("no graph.{}.{key} entry naming the {what} file", self.name),
            ));
        };
        let resolved = self.path.parent().unwrap_or(Path::new("")).join(value);
        Ok((resolved, value.to_string(), line))
    }
}

/// `text` without `suffix`, compared ignoring ASCII case.
fn strip_suffix_ignore_case<'a>(text: &'a str, suffix: &str) -> Option<&'a str> {
    let cut = text.len().checked_sub(suffix.len())?;
    if text.is_char_boundary(cut) && text[cut..].eq_ignore_ascii_case(suffix) {
        Some(&text[..cut])
    } else {
        None
    }
}

/// The file name without compression suffixes and without `.ext` (original case kept).
fn file_stem(path: &Path, ext: &str) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut logical = name.as_str();
    for compression in [".gz", ".gzip", ".zst", ".zstd"] {
        if let Some(stripped) = strip_suffix_ignore_case(logical, compression) {
            logical = stripped;
            break;
        }
    }
    strip_suffix_ignore_case(logical, &format!(".{ext}"))
        .unwrap_or(logical)
        .to_string()
}

fn require_exists(
    path: &Path,
    properties: &Path,
    key: &str,
    value: &str,
    line: u64,
    what: &str,
) -> Result<()> {
    if path.is_file() {
        Ok(())
    } else {
        Err(Error::input(
            properties,
            Some(line),
            format!(
                "{what} file '{value}' named by {key} not found (looked for {})",
                path.display()
            ),
        ))
    }
}

fn plan_from_properties(path: &Path, opts: &ImportOptions, reason: &str) -> Result<Plan> {
    let graph = GraphProperties::read(path)?;
    let name = &graph.name;
    let (vertex_file, vertex_value, vertex_line) = graph.data_file("vertex-file", "vertex")?;
    let vertex_key = format!("graph.{name}.vertex-file");
    require_exists(
        &vertex_file,
        path,
        &vertex_key,
        &vertex_value,
        vertex_line,
        "vertex",
    )?;

    let (mut edge_file, edge_value, edge_line) = graph.data_file("edge-file", "edge")?;
    let edge_key = format!("graph.{name}.edge-file");
    let mut notes = Vec::new();
    if edge_file == vertex_file {
        // The published data has this slip in two graphs: read NAME.e beside the vertex file.
        let vertex_stem = file_stem(&vertex_file, "v");
        let sibling = vertex_file.with_file_name(format!("{vertex_stem}.e"));
        if sibling.is_file() {
            notes.push(format!(
                "{edge_key} names the vertex file '{edge_value}'; reading {} beside it instead",
                sibling
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            ));
            edge_file = sibling;
        } else {
            return Err(Error::input(
                path,
                Some(edge_line),
                format!("{edge_key} names the same file as {vertex_key} ('{edge_value}'), and no .e file is beside it"),
            ));
        }
    } else {
        require_exists(&edge_file, path, &edge_key, &edge_value, edge_line, "edge")?;
    }

    let declared_weight = graph.weight_field();
    let read_weights = opts.weighted.unwrap_or(declared_weight.is_some());
    let weight_field = read_weights.then(|| declared_weight.unwrap_or(DEFAULT_WEIGHT_FIELD));
    let directed = graph.directed()?;

    let what = graph_description(name, &vertex_file, Some(&edge_file), directed, weight_field);
    let mut description = format!("{what} ({reason})");
    for note in notes {
        description.push_str("; note: ");
        description.push_str(&note);
    }
    Ok(Plan {
        jobs: vec![
            FileJob::VertexList { path: vertex_file },
            FileJob::EdgeList {
                path: edge_file,
                weight_field,
            },
        ],
        description,
        directed,
        weighted: Some(read_weights),
        path: path.to_path_buf(),
    })
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

fn graph_description(
    name: &str,
    vertex_file: &Path,
    edge_file: Option<&Path>,
    directed: Option<bool>,
    weight_field: Option<usize>,
) -> String {
    let mut what = format!(
        "LDBC Graphalytics graph '{name}': {}",
        file_name(vertex_file)
    );
    match edge_file {
        Some(edges) => what.push_str(&format!(" + {}", file_name(edges))),
        None => what.push_str(" (vertices only)"),
    }
    match directed {
        Some(true) => what.push_str(", directed"),
        Some(false) => what.push_str(", undirected"),
        None => {}
    }
    if let Some(field) = weight_field {
        what.push_str(&format!(", weights in column {}", field + 1));
    }
    what
}

/// Finds `STEM.EXT` (possibly compressed) among the other inputs, or beside `near` on disk.
fn find_partner(
    stem: &str,
    ext: &str,
    near: &Path,
    inputs: &[PathBuf],
    taken: &mut [bool],
) -> Option<PathBuf> {
    let wanted = format!("{stem}.{ext}").to_lowercase();
    for (i, other) in inputs.iter().enumerate() {
        if !taken[i] && logical_name(other) == wanted {
            taken[i] = true;
            return Some(other.clone());
        }
    }
    ["", ".gz", ".zst"]
        .iter()
        .map(|suffix| near.with_file_name(format!("{stem}.{ext}{suffix}")))
        .find(|candidate| candidate.is_file())
}

fn plan_from_pair(
    index: usize,
    inputs: &[PathBuf],
    taken: &mut [bool],
    opts: &ImportOptions,
    reason: &str,
) -> Result<Plan> {
    let path = &inputs[index];
    let given_is_vertex_file = logical_extension(path) == "v";
    let stem = file_stem(path, if given_is_vertex_file { "v" } else { "e" });
    let (vertex_file, edge_file) = if given_is_vertex_file {
        (
            Some(path.clone()),
            find_partner(&stem, "e", path, inputs, taken),
        )
    } else {
        (
            find_partner(&stem, "v", path, inputs, taken),
            Some(path.clone()),
        )
    };

    // A properties file beside the data says whether it is directed and weighted.
    let properties_path = path.with_file_name(format!("{stem}.properties"));
    let graph = if properties_path.is_file() {
        Some(GraphProperties::read(&properties_path)?)
    } else {
        None
    };
    let directed = match &graph {
        Some(g) => g.directed()?,
        None => None,
    };
    let declared_weight = graph.as_ref().and_then(GraphProperties::weight_field);
    let read_weights = opts.weighted.unwrap_or(declared_weight.is_some());
    let weight_field = read_weights.then(|| declared_weight.unwrap_or(DEFAULT_WEIGHT_FIELD));

    let mut jobs = Vec::new();
    let mut what = match &vertex_file {
        Some(v) => graph_description(&stem, v, edge_file.as_deref(), directed, weight_field),
        None => {
            let edges = edge_file.as_deref().unwrap_or(path);
            let mut what = format!("LDBC Graphalytics edge file {}", file_name(edges));
            if let Some(field) = weight_field {
                what.push_str(&format!(", weights in column {}", field + 1));
            }
            what.push_str(&format!(
                " (no {stem}.v beside it: isolated vertices cannot be known)"
            ));
            what
        }
    };
    if graph.is_some() {
        what.push_str(&format!("; direction and weights from {stem}.properties"));
    }
    if let Some(v) = vertex_file {
        jobs.push(FileJob::VertexList { path: v });
    }
    if let Some(e) = edge_file {
        jobs.push(FileJob::EdgeList {
            path: e,
            weight_field,
        });
    }
    Ok(Plan {
        jobs,
        description: format!("{what} ({reason})"),
        directed,
        weighted: if graph.is_some() || opts.weighted.is_some() {
            Some(read_weights)
        } else {
            None
        },
        path: path.clone(),
    })
}
