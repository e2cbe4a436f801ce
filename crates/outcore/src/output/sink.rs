//! Where written bytes go: a file that appears only when complete, optionally compressed.
//!
//! An output file is written under a hidden temporary name next to its final path and renamed
//! over it by [`OutputFile::finish`]; dropped unfinished (an error, Ctrl-C) it is removed. So
//! a reader never sees a half-written result or edge list, and a failed run does not clobber
//! the previous good file. Paths that already exist and are not regular files (`/dev/stdout`,
//! a named pipe) are written in place, as there is nothing to rename.
//!
//! The compression is chosen by the name: `.gz` (gzip) or `.zst` / `.zstd` (zstandard).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};

/// Buffer between the formatters and the file (or the compressor).
const BUFFER_BYTES: usize = 1 << 20;

/// Compression of an output file, from its last extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    /// The compression a file name asks for, and the name without that suffix (whose own
    /// extension then names the content format: `graph.bin32.zst` → (Zstd, `graph.bin32`)).
    pub fn from_path(path: &Path) -> (Compression, String) {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let lower = name.to_ascii_lowercase();
        for (suffix, compression) in
            [(".gz", Compression::Gzip), (".zst", Compression::Zstd), (".zstd", Compression::Zstd)]
        {
            if lower.ends_with(suffix) && lower.len() > suffix.len() {
                return (compression, name[..name.len() - suffix.len()].to_string());
            }
        }
        (Compression::None, name)
    }
}

enum Encoder {
    Plain(BufWriter<File>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
    Zstd(zstd::Encoder<'static, BufWriter<File>>),
}

impl Encoder {
    fn as_write(&mut self) -> &mut dyn Write {
        match self {
            Encoder::Plain(w) => w,
            Encoder::Gzip(w) => w,
            Encoder::Zstd(w) => w,
        }
    }

    fn finish(self) -> io::Result<File> {
        let buffered = match self {
            Encoder::Plain(w) => w,
            Encoder::Gzip(w) => w.finish()?,
            Encoder::Zstd(w) => w.finish()?,
        };
        buffered.into_inner().map_err(|e| e.into_error())
    }
}

/// A file being written; see the module documentation.
pub struct OutputFile {
    encoder: Option<Encoder>,
    final_path: PathBuf,
    /// `Some` while writing under a temporary name.
    temp_path: Option<PathBuf>,
    uncompressed_bytes: u64,
}

impl OutputFile {
    /// Creates `path`, compressed as its name says.
    pub fn create(path: &Path) -> Result<OutputFile> {
        Self::create_with(path, Compression::from_path(path).0)
    }

    /// Creates `path` with an explicit compression.
    pub fn create_with(path: &Path, compression: Compression) -> Result<OutputFile> {
        let in_place = std::fs::metadata(path).map(|m| !m.is_file()).unwrap_or(false);
        let temp_path = if in_place {
            None
        } else {
            let name = path
                .file_name()
                .ok_or_else(|| Error::invalid(format!("output path '{}' does not name a file", path.display())))?;
            Some(path.with_file_name(format!(".{}.partial-{}", name.to_string_lossy(), std::process::id())))
        };
        let open_path = temp_path.as_deref().unwrap_or(path);
        let file =
            if in_place { std::fs::OpenOptions::new().write(true).open(open_path) } else { File::create(open_path) }
                .context(|| format!("creating {}", path.display()))?;
        let buffered = BufWriter::with_capacity(BUFFER_BYTES, file);
        let encoder = match compression {
            Compression::None => Encoder::Plain(buffered),
            Compression::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(buffered, flate2::Compression::fast())),
            Compression::Zstd => Encoder::Zstd(
                zstd::Encoder::new(buffered, zstd::DEFAULT_COMPRESSION_LEVEL)
                    .context(|| format!("starting zstd compression of {}", path.display()))?,
            ),
        };
        Ok(OutputFile { encoder: Some(encoder), final_path: path.to_path_buf(), temp_path, uncompressed_bytes: 0 })
    }

    pub fn path(&self) -> &Path {
        &self.final_path
    }

    /// Bytes written so far, before compression.
    pub fn uncompressed_bytes(&self) -> u64 {
        self.uncompressed_bytes
    }

    /// Flushes, closes the compressor and puts the file in place. Returns its size on disk.
    pub fn finish(mut self) -> Result<u64> {
        let path = self.final_path.clone();
        let encoder = self.encoder.take().ok_or_else(|| Error::invalid("output file already finished"))?;
        let file = encoder.finish().context(|| format!("writing {}", path.display()))?;
        let bytes = file.metadata().map(|m| m.len()).unwrap_or(self.uncompressed_bytes);
        drop(file);
        if let Some(temp) = self.temp_path.take() {
            if let Err(e) = std::fs::rename(&temp, &path) {
                let _ = std::fs::remove_file(&temp);
                return Err(Error::io(format!("moving {} into place", path.display()), e));
            }
        }
        Ok(bytes)
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let encoder = self.encoder.as_mut().ok_or_else(|| io::Error::other("output file already finished"))?;
        let n = encoder.as_write().write(buf)?;
        self.uncompressed_bytes += n as u64;
        Ok(n)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let encoder = self.encoder.as_mut().ok_or_else(|| io::Error::other("output file already finished"))?;
        encoder.as_write().write_all(buf)?;
        self.uncompressed_bytes += buf.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.encoder.as_mut() {
            Some(encoder) => encoder.as_write().flush(),
            None => Ok(()),
        }
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let Some(temp) = self.temp_path.take() {
            drop(self.encoder.take());
            let _ = std::fs::remove_file(temp);
        }
    }
}
