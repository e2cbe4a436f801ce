//! Parquet edge tables (`outcore import edges.parquet`), read natively with the `parquet`
//! crate's column readers: no Python, no arrow (the same reason as the result writer in
//! `output/parquet.rs`: a few flat columns do not need arrow's build time).
//!
//! A Parquet file is a table of columns stored in row groups; an edge table has a source and a
//! target column and maybe a weight column. They are chosen as in a CSV file: by
//! `--src-col/--dst-col/--weight-col` (a name, or a 0-based index), by default the first two
//! columns, and the weight a column named `weight`, else the third when weights are asked for.
//! Id columns are integers (INT32/INT64, signed or unsigned; negative ids are refused) or
//! strings (BYTE_ARRAY, which needs `--ids string`; integer columns then become their decimal
//! text); weights are any numeric column.
//!
//! Memory: the file is read row group by row group and, inside a group, page by page through
//! the column readers, in batches of at most the importer's batch size; nothing holds a whole
//! column. The footer (schema, row-group sizes) is read at planning time, so a missing column
//! or a column of the wrong type is reported, naming the file and the column, before any work.
//! Parquet compresses its pages itself: files are read as they are (uncompressed or snappy
//! pages; other codecs are reported as not built in), not through gzip/zstd detection.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parquet::basic::{ConvertedType, LogicalType, Type as PhysicalType};
use parquet::column::reader::ColumnReader;
use parquet::data_type::ByteArray;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::schema::types::ColumnDescriptor;

use super::{BadLines, FileJob, FileParser, Plan};
use crate::error::{Error, Result};
use crate::ingest::{ImportOptions, InputRecord, RawId};
use crate::store::IdType;

/// Rows read from each column in one go, at most.
const BATCH_ROWS: usize = 1 << 16;

/// How a selected column's values are read.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Int32 { unsigned: bool },
    Int64 { unsigned: bool },
    Float,
    Double,
    Text,
}

/// One selected column: where it is, what it holds, whether it may hold nulls.
#[derive(Debug, Clone)]
struct Column {
    index: usize,
    name: String,
    kind: Kind,
    nullable: bool,
}

/// Where the edges of a Parquet file are: decided once from its footer at planning time.
#[derive(Debug, Clone)]
pub(super) struct ParquetLayout {
    pub(super) path: PathBuf,
    src: Column,
    dst: Column,
    weight: Option<Column>,
}

fn open_reader(path: &Path) -> Result<SerializedFileReader<File>> {
    let file = File::open(path).map_err(|e| Error::input(path, None, format!("cannot open: {e}")))?;
    SerializedFileReader::new(file).map_err(|e| Error::input(path, None, format!("not a readable Parquet file: {e}")))
}

pub(super) fn plan(path: &Path, opts: &ImportOptions, reason: &str) -> Result<Plan> {
    let reader = open_reader(path)?;
    let metadata = reader.metadata();
    let schema = metadata.file_metadata().schema_descr();
    let names: Vec<String> = schema.columns().iter().map(|c| c.path().string()).collect();
    if names.len() < 2 {
        return Err(Error::input(path, None, "a Parquet edge table needs at least two columns (source and target)"));
    }
    let pick = |spec: &Option<String>, option: &str, default: usize| match spec {
        Some(spec) => resolve_column(spec, option, &names, path),
        None => Ok(default),
    };
    let (src, dst) = (pick(&opts.src_col, "--src-col", 0)?, pick(&opts.dst_col, "--dst-col", 1)?);
    let weight = weight_column(opts, &names, path)?;
    let column = |index: usize, role: Role| describe_column(path, schema.column(index).as_ref(), index, role, opts.ids);
    let layout = ParquetLayout {
        path: path.to_path_buf(),
        src: column(src, Role::Id("--src-col"))?,
        dst: column(dst, Role::Id("--dst-col"))?,
        weight: weight.map(|w| column(w, Role::Weight)).transpose()?,
    };
    let mut what = format!("Parquet (source '{}', target '{}'", layout.src.name, layout.dst.name);
    if let Some(w) = &layout.weight {
        what.push_str(&format!(", weight '{}'", w.name));
    }
    what.push_str(&format!(
        "; {} rows in {} row groups)",
        metadata.file_metadata().num_rows(),
        metadata.num_row_groups()
    ));
    Ok(Plan {
        weighted: if layout.weight.is_some() { Some(true) } else { opts.weighted },
        jobs: vec![FileJob::Parquet(layout)],
        description: format!("{what} ({reason})"),
        directed: None,
        path: path.to_path_buf(),
    })
}

/// The weight column: `--weight-col`, else one named `weight`, else the third when weights
/// are asked for; none with `--unweighted`.
fn weight_column(opts: &ImportOptions, names: &[String], path: &Path) -> Result<Option<usize>> {
    let named = names.iter().position(|n| n.trim().eq_ignore_ascii_case("weight"));
    Ok(match (opts.weighted, &opts.weight_col) {
        (Some(false), _) => None,
        (_, Some(spec)) => Some(resolve_column(spec, "--weight-col", names, path)?),
        (Some(true), None) => match named {
            Some(index) => Some(index),
            None if names.len() > 2 => Some(2),
            None => {
                return Err(Error::input(
                    path,
                    None,
                    "weights were asked for but the Parquet file has only two columns; name the weight column with --weight-col",
                ))
            }
        },
        (None, None) => named,
    })
}

fn resolve_column(spec: &str, option: &str, names: &[String], path: &Path) -> Result<usize> {
    let spec = spec.trim();
    let exact = names.iter().position(|n| n == spec);
    let found = exact.or_else(|| names.iter().position(|n| n.eq_ignore_ascii_case(spec)));
    match found.or_else(|| spec.parse::<usize>().ok().filter(|&i| i < names.len())) {
        Some(index) => Ok(index),
        None => Err(Error::input(
            path,
            None,
            format!(
                "{option} '{spec}' matches no column of the Parquet file (columns: {}; or give a 0-based index below {})",
                names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", "),
                names.len()
            ),
        )),
    }
}

/// What a column is selected for.
#[derive(Debug, Clone, Copy)]
enum Role {
    /// An id column, with the option that chooses it.
    Id(&'static str),
    Weight,
}

/// Checks that the column can serve its role and says how to read it.
fn describe_column(path: &Path, desc: &ColumnDescriptor, index: usize, role: Role, ids: IdType) -> Result<Column> {
    let name = desc.path().string();
    let bad = |message: String| Err(Error::input(path, None, format!("column '{name}' {message}")));
    if desc.max_rep_level() > 0 {
        return bad("is a list (repeated); edge columns must be flat".into());
    }
    let kind = match desc.physical_type() {
        PhysicalType::INT32 => Kind::Int32 { unsigned: is_unsigned(desc) },
        PhysicalType::INT64 => Kind::Int64 { unsigned: is_unsigned(desc) },
        PhysicalType::FLOAT => Kind::Float,
        PhysicalType::DOUBLE => Kind::Double,
        PhysicalType::BYTE_ARRAY => Kind::Text,
        other => return bad(format!("has Parquet type {other}, which is neither an integer, a float nor a string")),
    };
    match (role, kind) {
        (Role::Id(option), Kind::Float | Kind::Double) => {
            return bad(format!("holds floating-point numbers; ids ({option}) must be integers or strings"))
        }
        (Role::Id(option), Kind::Text) if ids == IdType::U64 => {
            return bad(format!("holds strings; import it with --ids string (or choose another column with {option})"))
        }
        (Role::Weight, Kind::Text) => return bad("holds strings; weights (--weight-col) must be numbers".into()),
        _ => {}
    }
    Ok(Column { index, name, kind, nullable: desc.max_def_level() > 0 })
}

fn is_unsigned(desc: &ColumnDescriptor) -> bool {
    match desc.logical_type_ref() {
        Some(LogicalType::Integer(int)) => !int.is_signed,
        _ => matches!(
            desc.converted_type(),
            ConvertedType::UINT_8 | ConvertedType::UINT_16 | ConvertedType::UINT_32 | ConvertedType::UINT_64
        ),
    }
}

/// The values of one batch of one column (nulls left out: see [`ColumnStream::levels`]).
enum Values {
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Bytes(Vec<ByteArray>),
}

/// A column of the current row group, read batch by batch.
struct ColumnStream {
    reader: ColumnReader,
    column: Column,
    values: Values,
    /// Definition levels of the batch (nullable columns): 1 = a value, 0 = null.
    levels: Vec<i16>,
}

impl ColumnStream {
    fn new(reader: ColumnReader, column: &Column) -> ColumnStream {
        let values = match column.kind {
            Kind::Int32 { .. } => Values::I32(Vec::new()),
            Kind::Int64 { .. } => Values::I64(Vec::new()),
            Kind::Float => Values::F32(Vec::new()),
            Kind::Double => Values::F64(Vec::new()),
            Kind::Text => Values::Bytes(Vec::new()),
        };
        ColumnStream { reader, column: column.clone(), values, levels: Vec::new() }
    }

    /// Reads the next `rows` rows; returns how many there were.
    fn read(&mut self, rows: usize) -> parquet::errors::Result<usize> {
        self.levels.clear();
        let levels = if self.column.nullable { Some(&mut self.levels) } else { None };
        let read = match (&mut self.reader, &mut self.values) {
            (ColumnReader::Int32ColumnReader(r), Values::I32(v)) => {
                v.clear();
                r.read_records(rows, levels, None, v)?
            }
            (ColumnReader::Int64ColumnReader(r), Values::I64(v)) => {
                v.clear();
                r.read_records(rows, levels, None, v)?
            }
            (ColumnReader::FloatColumnReader(r), Values::F32(v)) => {
                v.clear();
                r.read_records(rows, levels, None, v)?
            }
            (ColumnReader::DoubleColumnReader(r), Values::F64(v)) => {
                v.clear();
                r.read_records(rows, levels, None, v)?
            }
            (ColumnReader::ByteArrayColumnReader(r), Values::Bytes(v)) => {
                v.clear();
                r.read_records(rows, levels, None, v)?
            }
            _ => return Err(parquet::errors::ParquetError::General("column reader of an unexpected type".into())),
        };
        Ok(read.0)
    }

    /// Positions in `values` of the batch's rows (`None` for a null), in row order.
    fn positions(&self, rows: usize) -> Vec<Option<usize>> {
        if !self.column.nullable {
            return (0..rows).map(Some).collect();
        }
        let mut next = 0;
        self.levels
            .iter()
            .map(|&level| {
                (level > 0).then(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect()
    }

    /// The id at `at` in `values`.
    fn id(&self, at: usize, ids: IdType) -> std::result::Result<RawId, String> {
        let integer = match (&self.values, self.column.kind) {
            (Values::I32(v), Kind::Int32 { unsigned: true }) => Some(v[at] as u32 as i128),
            (Values::I32(v), _) => Some(v[at] as i128),
            (Values::I64(v), Kind::Int64 { unsigned: true }) => Some(v[at] as u64 as i128),
            (Values::I64(v), _) => Some(v[at] as i128),
            _ => None,
        };
        match (integer, &self.values) {
            (Some(i), _) if i < 0 => Err(format!("negative id {i} (ids must be non-negative integers or strings)")),
            (Some(i), _) if ids == IdType::String => Ok(RawId::Str(i.to_string())),
            (Some(i), _) => Ok(RawId::U64(i as u64)),
            (None, Values::Bytes(v)) => match std::str::from_utf8(v[at].data()) {
                Ok(text) => Ok(RawId::Str(text.to_string())),
                Err(_) => Err("an id that is not UTF-8 text".into()),
            },
            (None, _) => Err("an id that is not an integer or a string".into()),
        }
    }

    /// The weight at `at` in `values`.
    fn weight(&self, at: usize) -> std::result::Result<f64, String> {
        let w = match (&self.values, self.column.kind) {
            (Values::F64(v), _) => v[at],
            (Values::F32(v), _) => v[at] as f64,
            (Values::I32(v), Kind::Int32 { unsigned: true }) => v[at] as u32 as f64,
            (Values::I32(v), _) => v[at] as f64,
            (Values::I64(v), Kind::Int64 { unsigned: true }) => v[at] as u64 as f64,
            (Values::I64(v), _) => v[at] as f64,
            (Values::Bytes(_), _) => return Err("a weight that is not a number".into()),
        };
        if w.is_nan() {
            return Err("weight NaN (NaN is not a usable edge weight)".into());
        }
        Ok(w)
    }
}

/// The selected columns of the row group being read.
struct Group {
    src: ColumnStream,
    dst: ColumnStream,
    weight: Option<ColumnStream>,
    rows_left: usize,
    /// The group's compressed bytes, counted into the progress as its rows are read.
    bytes: u64,
    rows: usize,
}

pub(super) struct ParquetParser {
    reader: SerializedFileReader<File>,
    layout: ParquetLayout,
    ids: IdType,
    next_group: usize,
    group: Option<Group>,
    /// Rows read so far (0-based number of the next row), for messages.
    row: u64,
    bytes_read: Arc<AtomicU64>,
}

impl ParquetParser {
    pub(super) fn new(layout: ParquetLayout, ids: IdType, bytes_read: Arc<AtomicU64>) -> Result<ParquetParser> {
        let reader = open_reader(&layout.path)?;
        Ok(ParquetParser { reader, layout, ids, next_group: 0, group: None, row: 0, bytes_read })
    }

    fn error(&self, message: impl std::fmt::Display) -> Error {
        Error::input(&self.layout.path, None, message.to_string())
    }

    /// Opens the next row group's selected columns; `false` when there is none.
    fn open_group(&mut self) -> Result<bool> {
        if self.next_group >= self.reader.num_row_groups() {
            return Ok(false);
        }
        let index = self.next_group;
        self.next_group += 1;
        let meta = self.reader.metadata().row_group(index);
        let (rows, bytes) = (meta.num_rows().max(0) as usize, meta.compressed_size().max(0) as u64);
        let group = self.reader.get_row_group(index).map_err(|e| self.error(format!("row group {index}: {e}")))?;
        let stream = |column: &Column| {
            group
                .get_column_reader(column.index)
                .map(|reader| ColumnStream::new(reader, column))
                .map_err(|e| self.error(format!("row group {index}, column '{}': {e}", column.name)))
        };
        let (src, dst) = (stream(&self.layout.src)?, stream(&self.layout.dst)?);
        let weight = self.layout.weight.as_ref().map(stream).transpose()?;
        self.group = Some(Group { src, dst, weight, rows_left: rows, bytes, rows });
        Ok(true)
    }

    /// Reads `rows` rows of every selected column of the current group.
    fn read_columns(&mut self, rows: usize) -> Result<()> {
        let path = self.layout.path.clone();
        let group = self.group.as_mut().expect("a row group is open");
        let streams = [Some(&mut group.src), Some(&mut group.dst), group.weight.as_mut()];
        for stream in streams.into_iter().flatten() {
            let got = stream
                .read(rows)
                .map_err(|e| Error::input(&path, None, format!("column '{}': {e}", stream.column.name)))?;
            if got != rows {
                return Err(Error::input(
                    &path,
                    None,
                    format!(
                        "column '{}' has {got} values where its row group has {rows} more rows",
                        stream.column.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Turns the batch just read into records; a bad row is an error or, with
    /// `--skip-bad-lines`, skipped and counted.
    fn emit(&self, rows: usize, out: &mut Vec<InputRecord>, bad_lines: &mut BadLines) -> Result<()> {
        let group = self.group.as_ref().expect("a row group is open");
        let (src_at, dst_at) = (group.src.positions(rows), group.dst.positions(rows));
        let weight_at = group.weight.as_ref().map(|w| w.positions(rows));
        for r in 0..rows {
            let weight = match (&group.weight, &weight_at) {
                (Some(w), Some(at)) => Some(value(&w.column, at[r], |i| w.weight(i))),
                _ => None,
            };
            let record = value(&group.src.column, src_at[r], |i| group.src.id(i, self.ids)).and_then(|src| {
                let dst = value(&group.dst.column, dst_at[r], |i| group.dst.id(i, self.ids))?;
                Ok(InputRecord::Edge { src, dst, weight: weight.transpose()? })
            });
            match record {
                Ok(record) => out.push(record),
                Err(message) => bad_lines.handle(self.error(format!("row {}: {message}", self.row + r as u64 + 1)))?,
            }
        }
        Ok(())
    }
}

/// A row's value of `column`, or why there is none.
fn value<T>(
    column: &Column,
    at: Option<usize>,
    read: impl FnOnce(usize) -> std::result::Result<T, String>,
) -> std::result::Result<T, String> {
    match at {
        Some(i) => read(i).map_err(|m| format!("column '{}': {m}", column.name)),
        None => Err(format!("column '{}' is null", column.name)),
    }
}

impl FileParser for ParquetParser {
    fn read_batch(&mut self, out: &mut Vec<InputRecord>, max: usize, bad_lines: &mut BadLines) -> Result<bool> {
        let mut left = max;
        while left > 0 {
            if self.group.as_ref().is_none_or(|g| g.rows_left == 0) && !self.open_group()? {
                return Ok(false);
            }
            let rows = left.min(BATCH_ROWS).min(self.group.as_ref().map_or(0, |g| g.rows_left));
            if rows == 0 {
                continue;
            }
            self.read_columns(rows)?;
            self.emit(rows, out, bad_lines)?;
            let group = self.group.as_mut().expect("a row group is open");
            group.rows_left -= rows;
            self.bytes_read.fetch_add(group.bytes * rows as u64 / group.rows.max(1) as u64, Ordering::Relaxed);
            self.row += rows as u64;
            left -= rows;
        }
        Ok(true)
    }
}
