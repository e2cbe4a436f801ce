//! Raw binary edge lists: little-endian `(src, dst)` pairs of u32 or u64, nothing else.
//!
//! The cheapest format to write from another program and to read here. It has no lines, so
//! the only possible damage is a torn last pair: a size that is not a multiple of the pair
//! size. For an uncompressed file that is checked from its size before reading anything; for a
//! compressed one when the stream ends.

use std::path::{Path, PathBuf};

use super::compress::{self, Compression, InputStream};
use super::{describe, BadLines, FileJob, FileParser, Plan};
use crate::error::{Error, Result};
use crate::ingest::{ImportOptions, InputRecord, RawId};
use crate::store::IdType;

const BUFFER_BYTES: usize = 1 << 20;

pub(super) fn plan(
    path: &Path,
    opts: &ImportOptions,
    id_bytes: usize,
    reason: &str,
) -> Result<Plan> {
    if opts.weighted == Some(true) {
        return Err(Error::invalid(format!(
            "{}: raw binary pairs (bin32/bin64) carry no weights; import without --weighted \
             or convert the input to a text edge list with a weight column",
            path.display()
        )));
    }
    let compression = compress::detect_compression(path)?;
    let pair_bytes = 2 * id_bytes as u64;
    if compression == Compression::None && !opts.skip_bad_lines {
        let size = std::fs::metadata(path)
            .map_err(|e| Error::input(path, None, format!("cannot read file size: {e}")))?
            .len();
        if size % pair_bytes != 0 {
            return Err(torn_pair_error(path, size, id_bytes));
        }
    }
    let what = format!("raw little-endian u{} id pairs", id_bytes * 8);
    Ok(Plan {
        jobs: vec![FileJob::Binary {
            path: path.to_path_buf(),
            id_bytes,
        }],
        description: describe(compression, &what, reason),
        directed: None,
        weighted: Some(false),
        path: path.to_path_buf(),
    })
}

fn torn_pair_error(path: &Path, size: u64, id_bytes: usize) -> Error {
    let pair_bytes = 2 * id_bytes as u64;
    Error::input(
        path,
        None,
        format!(
            "size {size} bytes is not a multiple of {pair_bytes} (one pair of u{} ids): \
             {} trailing bytes (truncated file, or the wrong --format bin32/bin64?)",
            id_bytes * 8,
            size % pair_bytes
        ),
    )
}

pub(super) struct BinaryParser {
    input: InputStream,
    path: PathBuf,
    ids: IdType,
    id_bytes: usize,
    buf: Vec<u8>,
    /// Unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    eof: bool,
    /// Decompressed bytes decoded so far, for the message about a torn last pair.
    consumed: u64,
}

impl BinaryParser {
    pub(super) fn new(input: InputStream, ids: IdType, id_bytes: usize) -> BinaryParser {
        let path = input.path().to_path_buf();
        BinaryParser {
            input,
            path,
            ids,
            id_bytes,
            buf: vec![0u8; BUFFER_BYTES],
            start: 0,
            end: 0,
            eof: false,
            consumed: 0,
        }
    }

    fn refill(&mut self) -> Result<()> {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        let n = self.input.read(&mut self.buf[self.end..])?;
        if n == 0 {
            self.eof = true;
        }
        self.end += n;
        Ok(())
    }

    #[inline]
    fn id(&self, bytes: &[u8]) -> RawId {
        let value = if self.id_bytes == 4 {
            let mut word = [0u8; 4];
            word.copy_from_slice(bytes);
            u32::from_le_bytes(word) as u64
        } else {
            let mut word = [0u8; 8];
            word.copy_from_slice(bytes);
            u64::from_le_bytes(word)
        };
        match self.ids {
            IdType::U64 => RawId::U64(value),
            IdType::String => RawId::Str(value.to_string()),
        }
    }
}

impl FileParser for BinaryParser {
    fn read_batch(
        &mut self,
        out: &mut Vec<InputRecord>,
        max: usize,
        bad_lines: &mut BadLines,
    ) -> Result<bool> {
        let pair_bytes = 2 * self.id_bytes;
        let limit = out.len() + max;
        while out.len() < limit {
            if self.end - self.start < pair_bytes {
                if self.eof {
                    let trailing = self.end - self.start;
                    if trailing > 0 {
                        let size = self.consumed + trailing as u64;
                        self.start = self.end;
                        bad_lines.handle(torn_pair_error(&self.path, size, self.id_bytes))?;
                    }
                    return Ok(false);
                }
                self.refill()?;
                continue;
            }
            let available_pairs = (self.end - self.start) / pair_bytes;
            let take = available_pairs.min(limit - out.len());
            for pair in
                self.buf[self.start..self.start + take * pair_bytes].chunks_exact(pair_bytes)
            {
                let src = self.id(&pair[..self.id_bytes]);
                let dst = self.id(&pair[self.id_bytes..]);
                out.push(InputRecord::Edge {
                    src,
                    dst,
                    weight: None,
                });
            }
            self.start += take * pair_bytes;
            self.consumed += (take * pair_bytes) as u64;
        }
        Ok(true)
    }
}
