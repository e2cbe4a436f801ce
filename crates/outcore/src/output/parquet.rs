//! Parquet result files, written with the `parquet` crate's column writers (no arrow: the
//! schema is a handful of flat columns, and arrow would triple the build time).
//!
//! Schema: `vertex` (INT64 annotated UINT_64, or BYTE_ARRAY annotated STRING for string ids),
//! then one column per result column:
//! * hops: optional INT64 (signed 64-bit); unreachable (`u64::MAX`) is null, which every
//!   dataframe library understands, rather than a magic number;
//! * counts: required INT64 annotated UINT_64;
//! * floats: required DOUBLE (infinity and NaN stored as such);
//! * labels: the vertex column's type, holding the label vertex's original id.
//!
//! Rows are buffered one row group at a time (`row_group_rows`), so memory is bounded by the
//! group size whatever the vertex count.

use std::io::Write;
use std::sync::Arc;

use parquet::basic::{Compression, LogicalType, Repetition, Type as PhysicalType};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

use crate::algo::{AlgorithmResult, ValueColumn};
use crate::error::{Error, Result};
use crate::store::{IdMap, IdType, OriginalId};

/// The values of one column for the current row group.
enum ColumnBuffer {
    /// `definition` is `Some` for nullable columns: 1 = present, 0 = null (absent from `values`).
    Int64 {
        values: Vec<i64>,
        definition: Option<Vec<i16>>,
    },
    Double(Vec<f64>),
    Bytes(Vec<ByteArray>),
}

impl ColumnBuffer {
    fn clear(&mut self) {
        match self {
            ColumnBuffer::Int64 { values, definition } => {
                values.clear();
                if let Some(d) = definition {
                    d.clear();
                }
            }
            ColumnBuffer::Double(v) => v.clear(),
            ColumnBuffer::Bytes(v) => v.clear(),
        }
    }

    fn push_id(&mut self, id: &OriginalId) -> Result<()> {
        match (self, id) {
            // UINT_64 is stored in INT64's bits; readers that honour the annotation get it back.
            (ColumnBuffer::Int64 { values, .. }, OriginalId::U64(v)) => values.push(*v as i64),
            (ColumnBuffer::Bytes(values), OriginalId::Str(s)) => values.push(ByteArray::from(s.as_str())),
            _ => return Err(Error::invalid("parquet output: vertex id of another type than the store's")),
        }
        Ok(())
    }
}

fn id_field(name: &str, id_type: IdType) -> Result<(Type, ColumnBuffer)> {
    match id_type {
        IdType::U64 => Ok((
            primitive(name, PhysicalType::INT64, Repetition::REQUIRED, Some(LogicalType::integer(64, false)))?,
            ColumnBuffer::Int64 { values: Vec::new(), definition: None },
        )),
        IdType::String => Ok((
            primitive(name, PhysicalType::BYTE_ARRAY, Repetition::REQUIRED, Some(LogicalType::String))?,
            ColumnBuffer::Bytes(Vec::new()),
        )),
    }
}

fn primitive(name: &str, physical: PhysicalType, repetition: Repetition, logical: Option<LogicalType>) -> Result<Type> {
    Type::primitive_type_builder(name, physical)
        .with_repetition(repetition)
        .with_logical_type(logical)
        .build()
        .map_err(|e| Error::invalid(format!("parquet column '{name}': {e}")))
}

pub(super) fn write<W: Write + Send>(
    ids: &IdMap,
    result: &AlgorithmResult,
    out: W,
    row_group_rows: usize,
    what: &str,
) -> Result<u64> {
    let failed = |e: ParquetError| Error::io(format!("writing parquet to {what}"), std::io::Error::other(e));
    let mut names = std::collections::BTreeSet::from(["vertex"]);
    for (name, _) in &result.columns {
        if !names.insert(name.as_str()) {
            return Err(Error::invalid(format!("parquet output: two columns would be named '{name}'")));
        }
    }

    let (vertex_field, vertex_buffer) = id_field("vertex", ids.id_type())?;
    let mut fields = vec![Arc::new(vertex_field)];
    let mut buffers = vec![vertex_buffer];
    for (name, column) in &result.columns {
        let (field, buffer) = match column {
            ValueColumn::Hops(_) => (
                primitive(name, PhysicalType::INT64, Repetition::OPTIONAL, Some(LogicalType::integer(64, true)))?,
                ColumnBuffer::Int64 { values: Vec::new(), definition: Some(Vec::new()) },
            ),
            ValueColumn::Count(_) => (
                primitive(name, PhysicalType::INT64, Repetition::REQUIRED, Some(LogicalType::integer(64, false)))?,
                ColumnBuffer::Int64 { values: Vec::new(), definition: None },
            ),
            ValueColumn::Float(_) => {
                (primitive(name, PhysicalType::DOUBLE, Repetition::REQUIRED, None)?, ColumnBuffer::Double(Vec::new()))
            }
            ValueColumn::Label(_) => id_field(name, ids.id_type())?,
        };
        fields.push(Arc::new(field));
        buffers.push(buffer);
    }
    let schema = Type::group_type_builder("outcore_result")
        .with_fields(fields)
        .build()
        .map_err(|e| Error::invalid(format!("parquet schema: {e}")))?;
    let properties = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
    let mut writer = SerializedFileWriter::new(out, Arc::new(schema), Arc::new(properties)).map_err(failed)?;

    let table = super::label_table(ids, result)?;
    let mut labels = super::LabelNames::new(table.as_deref());
    let mut rows = 0u64;
    let mut rows_in_group = 0usize;
    ids.for_each_by_original(|dense, original| {
        let index = dense as usize;
        buffers[0].push_id(original)?;
        for ((_, column), buffer) in result.columns.iter().zip(buffers.iter_mut().skip(1)) {
            match (column, &mut *buffer) {
                (ValueColumn::Hops(v), ColumnBuffer::Int64 { values, definition: Some(definition) }) => {
                    if v[index] == u64::MAX {
                        definition.push(0);
                    } else {
                        definition.push(1);
                        values.push(v[index] as i64);
                    }
                }
                (ValueColumn::Count(v), ColumnBuffer::Int64 { values, .. }) => values.push(v[index] as i64),
                (ValueColumn::Float(v), ColumnBuffer::Double(values)) => values.push(v[index]),
                (ValueColumn::Label(v), buffer) => match labels.table {
                    Some(table) => buffer.push_id(&OriginalId::U64(super::table_lookup(table, v[index])?))?,
                    None => buffer.push_id(labels.get(ids, v[index])?)?,
                },
                _ => return Err(Error::invalid("parquet output: column buffer does not match its column")),
            }
        }
        rows += 1;
        rows_in_group += 1;
        if rows_in_group == row_group_rows {
            flush_group(&mut writer, &mut buffers).map_err(failed)?;
            rows_in_group = 0;
        }
        Ok(())
    })?;
    if rows_in_group > 0 {
        flush_group(&mut writer, &mut buffers).map_err(failed)?;
    }
    writer.close().map_err(failed)?;
    Ok(rows)
}

fn flush_group<W: Write + Send>(
    writer: &mut SerializedFileWriter<W>,
    buffers: &mut [ColumnBuffer],
) -> parquet::errors::Result<()> {
    let mut group = writer.next_row_group()?;
    for buffer in buffers.iter_mut() {
        let mut column = group
            .next_column()?
            .ok_or_else(|| ParquetError::General("schema has fewer columns than the result".into()))?;
        match buffer {
            ColumnBuffer::Int64 { values, definition } => {
                column.typed::<Int64Type>().write_batch(values, definition.as_deref(), None)?;
            }
            ColumnBuffer::Double(values) => {
                column.typed::<DoubleType>().write_batch(values, None, None)?;
            }
            ColumnBuffer::Bytes(values) => {
                column.typed::<ByteArrayType>().write_batch(values, None, None)?;
            }
        }
        column.close()?;
        buffer.clear();
    }
    group.close()?;
    Ok(())
}
