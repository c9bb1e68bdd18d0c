//! Access logs as streams of lines: files or standard input, gzip-compressed or not, read in
//! bounded memory whatever the size of the file or of a line.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;

/// The read buffer: large enough that a line is nearly always whole inside it, so that it is
/// parsed where it lies instead of being copied.
const BUFFER_BYTES: usize = 256 * 1024;

/// The magic bytes that open a gzip member (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Opens an access log: `-` is standard input; a stream that starts with gzip's magic bytes is
/// decompressed (all its members, as `cat a.gz b.gz` or a rotated log may have several),
/// whatever the file is called.
pub fn open(path: &Path) -> io::Result<Box<dyn BufRead>> {
    if path == Path::new("-") {
        detect(io::stdin().lock())
    } else {
        detect(File::open(path)?)
    }
}

/// Wraps `reader`, decompressing it when it is gzip.
pub fn detect<R: Read + 'static>(mut reader: R) -> io::Result<Box<dyn BufRead>> {
    // A pipe may deliver the magic bytes one at a time: read until two bytes or the end.
    let mut head = [0u8; 2];
    let mut filled = 0;
    while filled < head.len() {
        match reader.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let whole = Cursor::new(head).take(filled as u64).chain(reader);
    if head[..filled] == GZIP_MAGIC {
        let decoder = flate2::read::MultiGzDecoder::new(BufReader::with_capacity(64 * 1024, whole));
        Ok(Box::new(BufReader::with_capacity(BUFFER_BYTES, decoder)))
    } else {
        Ok(Box::new(BufReader::with_capacity(BUFFER_BYTES, whole)))
    }
}

/// One line handed to a reader's callback.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    /// The line, without its `\n` or `\r\n` (cut at the limit when `too_long`).
    pub text: &'a [u8],
    /// Whether the line was longer than the limit.
    pub too_long: bool,
    /// How many bytes of input the line took, its end included.
    pub bytes: usize,
}

/// Calls `each` with every line of `reader`, in order. A line that lies whole in the reader's
/// buffer is handed over where it lies; others are gathered in `spill` (reused, and never grown
/// past `max` bytes: the rest of an overlong line is skipped). Stops at the first error `each`
/// returns; read errors go through `io_error`.
pub fn for_each_line<R, E>(
    reader: &mut R,
    spill: &mut Vec<u8>,
    max: usize,
    io_error: impl Fn(io::Error) -> E,
    mut each: impl FnMut(Line<'_>) -> Result<(), E>,
) -> Result<(), E>
where
    R: BufRead + ?Sized,
{
    spill.clear();
    let mut spilled_bytes = 0usize;
    let mut too_long = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_error(e)),
        };
        if available.is_empty() {
            // The last line may lack its `\n`.
            if spilled_bytes > 0 {
                each(finish(spill, too_long, spilled_bytes))?;
                spill.clear();
            }
            return Ok(());
        }
        match memchr::memchr(b'\n', available) {
            Some(end) if spilled_bytes == 0 => {
                let text = &available[..end];
                let long = text.len() > max;
                let line = Line {
                    text: strip_cr(&text[..text.len().min(max)]),
                    too_long: long,
                    bytes: end + 1,
                };
                let result = each(line);
                reader.consume(end + 1);
                result?;
            }
            Some(end) => {
                keep(spill, &available[..end], max, &mut too_long);
                reader.consume(end + 1);
                each(finish(spill, too_long, spilled_bytes + end + 1))?;
                spill.clear();
                spilled_bytes = 0;
                too_long = false;
            }
            None => {
                let len = available.len();
                keep(spill, available, max, &mut too_long);
                reader.consume(len);
                spilled_bytes += len;
            }
        }
    }
}

/// Appends `chunk` to `spill` up to `max` bytes, noting whether anything was cut.
fn keep(spill: &mut Vec<u8>, chunk: &[u8], max: usize, too_long: &mut bool) {
    let room = max.saturating_sub(spill.len());
    if chunk.len() > room {
        *too_long = true;
    }
    spill.extend_from_slice(&chunk[..chunk.len().min(room)]);
}

fn finish(spill: &[u8], too_long: bool, bytes: usize) -> Line<'_> {
    Line {
        text: strip_cr(spill),
        too_long,
        bytes,
    }
}

fn strip_cr(text: &[u8]) -> &[u8] {
    text.strip_suffix(b"\r").unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn lines(reader: &mut dyn BufRead, max: usize) -> Vec<(String, bool, usize)> {
        let mut out = Vec::new();
        let mut spill = Vec::new();
        for_each_line(
            reader,
            &mut spill,
            max,
            |e| e,
            |line| {
                out.push((
                    String::from_utf8_lossy(line.text).into_owned(),
                    line.too_long,
                    line.bytes,
                ));
                Ok(())
            },
        )
        .unwrap();
        out
    }

    #[test]
    fn lines_split_on_newlines_across_buffer_edges() {
        let text = b"one\r\ntwo\n\nthree-is-long\nlast";
        let mut small = BufReader::with_capacity(4, &text[..]);
        let got = lines(&mut small, 100);
        let names: Vec<&str> = got.iter().map(|(t, _, _)| t.as_str()).collect();
        assert_eq!(names, vec!["one", "two", "", "three-is-long", "last"]);
        assert_eq!(
            got.iter().map(|l| l.2).sum::<usize>(),
            text.len(),
            "every byte is accounted for"
        );
    }

    #[test]
    fn overlong_lines_are_cut_and_flagged() {
        let text = b"short\nthis line is far too long\nok\n";
        for capacity in [3, 64] {
            let mut reader = BufReader::with_capacity(capacity, &text[..]);
            let got = lines(&mut reader, 8);
            assert_eq!(got[0], ("short".into(), false, 6));
            assert_eq!(got[1], ("this lin".into(), true, 26));
            assert_eq!(got[2], ("ok".into(), false, 3));
        }
    }

    #[test]
    fn gzip_is_detected_by_content_and_members_are_concatenated() {
        let mut compressed = Vec::new();
        for part in ["a\nb\n", "c\n"] {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(part.as_bytes()).unwrap();
            compressed.extend(encoder.finish().unwrap());
        }
        let mut reader = detect(Cursor::new(compressed)).unwrap();
        let got: Vec<String> = lines(&mut reader, 100).into_iter().map(|l| l.0).collect();
        assert_eq!(got, vec!["a", "b", "c"]);
        let mut plain = detect(Cursor::new(b"\x1fplain".to_vec())).unwrap();
        assert_eq!(lines(&mut plain, 100)[0].0, "\u{1f}plain");
        let mut empty = detect(Cursor::new(Vec::new())).unwrap();
        assert!(lines(&mut empty, 100).is_empty());
    }
}
