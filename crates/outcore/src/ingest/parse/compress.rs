//! Opening an input file as a stream of (decompressed) bytes.
//!
//! Compression is recognised by the file's first bytes, not by its name: a `.gz` that is really
//! plain text, or a zstd file without an extension, are both read correctly. Every read error is
//! turned into an [`Error`] that names the file, and a compressed stream that stops in the middle
//! (a download cut short, a copy that ran out of disk) says so in words instead of surfacing as a
//! bare "unexpected end of file".
//!
//! The compressed bytes read are added to a shared counter, so the progress bar can compare them
//! with the sum of the input file sizes.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};

/// Buffer between the file and the decompressor (or the parser, for plain files).
const RAW_BUFFER_BYTES: usize = 256 * 1024;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// How an input file's bytes are encoded on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    /// Recognises gzip and zstd from the first bytes of a file.
    pub fn from_magic(head: &[u8]) -> Compression {
        if head.starts_with(&GZIP_MAGIC) {
            Compression::Gzip
        } else if head.starts_with(&ZSTD_MAGIC) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }

    /// Words for format descriptions ("", "gzip-compressed ", ...).
    pub fn adjective(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => "gzip-compressed ",
            Compression::Zstd => "zstd-compressed ",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Compression::None => "plain",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// Counts the bytes read from the file into a counter shared with the record source.
struct CountingReader {
    file: File,
    counter: Arc<AtomicU64>,
}

impl Read for CountingReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// An opened input: decompressed bytes, with errors that name the file.
pub struct InputStream {
    path: PathBuf,
    compression: Compression,
    reader: Box<dyn Read + Send>,
}

/// Opens a file for reading, mapping "not found" and friends to an error that names it.
pub fn open_file(path: &Path) -> Result<File> {
    File::open(path).map_err(|e| {
        let what = match e.kind() {
            io::ErrorKind::NotFound => "input file not found".to_string(),
            io::ErrorKind::PermissionDenied => {
                "input file cannot be read: permission denied".to_string()
            }
            _ => format!("cannot open input file: {e}"),
        };
        Error::input(path, None, what)
    })
}

/// Checks that an input exists and is a readable regular file.
///
/// Pipes and devices are refused by name (without opening them, which could block): format
/// detection reads the start of a file and then the parser reads it again from the beginning,
/// which a pipe cannot do: its first bytes would silently go missing.
pub fn check_input_file(path: &Path) -> Result<()> {
    let metadata = std::fs::metadata(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => Error::input(path, None, "input file not found"),
        _ => Error::input(path, None, format!("cannot access input file: {e}")),
    })?;
    if metadata.is_dir() {
        return Err(Error::input(
            path,
            None,
            "is a directory, not an input file",
        ));
    }
    if !metadata.is_file() {
        return Err(Error::input(
            path,
            None,
            "is not a regular file (a pipe or a device?): inputs are read more than once, \
             so save the data to a file first",
        ));
    }
    open_file(path).map(drop)
}

impl InputStream {
    /// Opens `path`, detects its compression from the magic bytes and adds the raw bytes read
    /// to `counter`.
    pub fn open(path: &Path, counter: Arc<AtomicU64>) -> Result<InputStream> {
        let file = open_file(path)?;
        let mut raw = BufReader::with_capacity(RAW_BUFFER_BYTES, CountingReader { file, counter });
        let compression = peek_compression(&mut raw, path)?;
        let reader: Box<dyn Read + Send> = match compression {
            Compression::None => Box::new(raw),
            // Multi-member gzip (bgzip, `cat a.gz b.gz`) is valid gzip: read every member.
            Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(raw)),
            Compression::Zstd => {
                Box::new(zstd::stream::read::Decoder::with_buffer(raw).map_err(|e| {
                    Error::input(path, None, format!("cannot start zstd decompression: {e}"))
                })?)
            }
        };
        Ok(InputStream {
            path: path.to_path_buf(),
            compression,
            reader,
        })
    }

    pub fn compression(&self) -> Compression {
        self.compression
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads decompressed bytes; `Ok(0)` only at the real end of the input.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        loop {
            match self.reader.read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.read_error(e)),
            }
        }
    }

    fn read_error(&self, e: io::Error) -> Error {
        let kind = self.compression.name();
        let message = match (self.compression, e.kind()) {
            (Compression::None, _) => format!("read error: {e}"),
            (_, io::ErrorKind::UnexpectedEof) => {
                format!("compressed stream ends unexpectedly (truncated {kind} file?)")
            }
            _ => format!("corrupt {kind} data: {e}"),
        };
        Error::input(&self.path, None, message)
    }
}

/// Looks at the first bytes of the file, without consuming them, for a magic number.
fn peek_compression(raw: &mut BufReader<CountingReader>, path: &Path) -> Result<Compression> {
    loop {
        match raw.fill_buf() {
            Ok(head) => return Ok(Compression::from_magic(head)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::input(path, None, format!("read error: {e}"))),
        }
    }
}

/// Reads up to `limit` decompressed bytes from the start of a file, for format detection.
/// A damaged compressed stream is reported here already if the damage is within the sample.
pub fn read_head(path: &Path, limit: usize) -> Result<(Vec<u8>, Compression)> {
    let mut stream = InputStream::open(path, Arc::new(AtomicU64::new(0)))?;
    let mut head = vec![0u8; limit];
    let mut filled = 0;
    while filled < limit {
        match stream.read(&mut head[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    head.truncate(filled);
    Ok((head, stream.compression()))
}

/// The compression of a file, from its magic bytes.
pub fn detect_compression(path: &Path) -> Result<Compression> {
    Ok(InputStream::open(path, Arc::new(AtomicU64::new(0)))?.compression())
}
