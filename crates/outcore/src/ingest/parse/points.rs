//! Points for k-means (`--format points`): one point per line, `x_1 x_2 … x_d` (whitespace or
//! comma separated, `#`/`%` comment lines and blank lines skipped). The point on the i-th data
//! line (0-based) becomes vertex `i` with one arc `i → j` of weight `x_j` per dimension `j`,
//! which is the store layout `algo::kmeans` reads (GraphD §6.9: coordinates as the edge
//! stream). Every line must have as many coordinates as the first; a line that does not is an
//! error naming the file and line.

use std::path::{Path, PathBuf};

use super::compress::{self, InputStream};
use super::text::{line_error, parse_weight, Fields, LineReader};
use super::{describe, BadLines, FileJob, FileParser, Plan};
use crate::error::{Error, Result};
use crate::ingest::{ImportOptions, InputRecord, RawId};
use crate::store::IdType;

pub(super) fn plan(path: &Path, opts: &ImportOptions, reason: &str) -> Result<Plan> {
    if opts.ids != IdType::U64 {
        return Err(Error::invalid("the points format numbers its points 0, 1, ...: use --ids u64"));
    }
    if opts.weighted == Some(false) || opts.undirected == Some(true) {
        return Err(Error::invalid("the points format makes a directed weighted store (coordinates are weights)"));
    }
    let compression = compress::detect_compression(path)?;
    Ok(Plan {
        jobs: vec![FileJob::Points { path: path.to_path_buf() }],
        description: describe(compression, "points, one 'x_1 ... x_d' per line (arc i -> j of weight x_j)", reason),
        directed: Some(true),
        weighted: Some(true),
        path: path.to_path_buf(),
    })
}

pub(super) struct PointsParser {
    lines: LineReader,
    path: PathBuf,
    /// Points read so far (the next point's id).
    points: u64,
    /// Coordinates per point, from the first point.
    dimensions: Option<usize>,
    coordinates: Vec<f64>,
}

impl PointsParser {
    pub(super) fn new(input: InputStream) -> Result<Self> {
        let path = input.path().to_path_buf();
        let lines = LineReader::new(input, "points")?;
        Ok(PointsParser { lines, path, points: 0, dimensions: None, coordinates: Vec::new() })
    }
}

/// Parses one point into `coordinates`; the first point fixes `dimensions`.
fn parse_point(
    line: &[u8],
    point: u64,
    coordinates: &mut Vec<f64>,
    dimensions: &mut Option<usize>,
) -> std::result::Result<(), String> {
    coordinates.clear();
    for token in Fields::new(line) {
        coordinates.push(parse_weight(token).map_err(|e| e.into_message())?);
    }
    let d = *dimensions.get_or_insert(coordinates.len());
    if coordinates.len() != d {
        return Err(format!("point {point} has {} coordinates but the first point has {d}", coordinates.len()));
    }
    Ok(())
}

impl FileParser for PointsParser {
    fn read_batch(&mut self, out: &mut Vec<InputRecord>, max: usize, bad_lines: &mut BadLines) -> Result<bool> {
        let limit = out.len() + max;
        while out.len() < limit {
            let Some((line_number, line)) = self.lines.next_line()? else {
                return Ok(false);
            };
            match Fields::new(line).next() {
                None => continue,
                Some(first) if matches!(first.first(), Some(b'#' | b'%')) => continue,
                Some(_) => {}
            }
            if let Err(message) = parse_point(line, self.points, &mut self.coordinates, &mut self.dimensions) {
                bad_lines.handle(line_error(&self.path, line_number, &message, line))?;
                continue;
            }
            let src = self.points;
            self.points += 1;
            out.extend(self.coordinates.iter().enumerate().map(|(j, &x)| InputRecord::Edge {
                src: RawId::U64(src),
                dst: RawId::U64(j as u64),
                weight: Some(x),
            }));
        }
        Ok(true)
    }
}
