//! What a context and its helper send each other over the helper's standard input and output:
//! frames (a u64 little-endian length, then that many bytes) holding a sealed request (the
//! device and the pipelines' SPIR-V) or a sealed answer (the helper's pipeline cache data).
//! Each side checks what it reads: a frame's length is bounded, its envelope whole, a request's
//! every count within the bytes there are.

use super::Source;
use crate::error::{Error, Result};
use std::io::{Read, Write};

/// The most pipelines and SPIR-V words one request may hold (a plan needs at most a handful).
const MAX_ENTRIES: usize = 1024;
const MAX_WORDS: usize = 1 << 24;
/// The longest frame either side accepts.
const MAX_FRAME: u64 = 1 << 28;

/// Writes `payload` sealed as one frame and flushes it.
pub(super) fn write_frame(out: &mut impl Write, payload: &[u8]) -> std::io::Result<()> {
    let sealed = crate::pipeline_file::seal(payload);
    out.write_all(&(sealed.len() as u64).to_le_bytes())?;
    out.write_all(&sealed)?;
    out.flush()
}

/// The next frame's payload; `None` at the end of the stream before a frame starts.
pub(super) fn read_frame(input: &mut impl Read) -> Result<Option<Vec<u8>>> {
    let bad = |what: String| Error::InvalidOption(format!("compile helper frame: {what}"));
    let mut len = [0u8; 8];
    match input.read(&mut len[..1]) {
        Ok(0) => return Ok(None),
        Ok(_) => {}
        Err(e) => return Err(bad(e.to_string())),
    }
    input.read_exact(&mut len[1..]).map_err(|e| bad(e.to_string()))?;
    let len = u64::from_le_bytes(len);
    if len > MAX_FRAME {
        return Err(bad(format!("{len} bytes (at most {MAX_FRAME})")));
    }
    let mut sealed = vec![0u8; len as usize];
    input.read_exact(&mut sealed).map_err(|e| bad(e.to_string()))?;
    crate::pipeline_file::open(&sealed)
        .map(<[u8]>::to_vec)
        .map(Some)
        .ok_or_else(|| bad("truncated or damaged".into()))
}

/// A request's payload: the device UUID (32 hex digits), the count of pipelines, then each
/// pipeline's pinned subgroup size (0: any), its count of words and its words, all u32
/// little-endian.
pub(super) fn encode(uuid: &str, sources: &[Source]) -> Vec<u8> {
    let mut out = uuid.as_bytes().to_vec();
    let mut put = |w: u32| out.extend_from_slice(&w.to_le_bytes());
    put(sources.len() as u32);
    for s in sources {
        put(s.subgroup_size.unwrap_or(0));
        put(s.words.len() as u32);
        s.words.iter().for_each(|&w| put(w));
    }
    out
}

/// [`encode`]'s payload read back, every count and length checked against the bytes there are.
pub(super) fn decode(payload: &[u8]) -> Result<(String, Vec<Source>)> {
    let bad = |what: &str| Error::InvalidOption(format!("compile request: {what}"));
    let uuid = payload
        .get(..32)
        .and_then(|u| std::str::from_utf8(u).ok())
        .filter(|u| u.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| bad("no device UUID"))?
        .to_string();
    let mut words = payload[32..]
        .chunks(4)
        .map(|c| c.try_into().map(u32::from_le_bytes).map_err(|_| bad("a partial word")));
    let mut next = |what: &str| words.next().unwrap_or_else(|| Err(bad(what)));
    let count = next("no count")? as usize;
    if count == 0 || count > MAX_ENTRIES {
        return Err(bad(&format!("{count} pipelines (1 to {MAX_ENTRIES})")));
    }
    let mut sources = Vec::with_capacity(count);
    for _ in 0..count {
        let subgroup_size = Some(next("no subgroup size")?).filter(|&s| s != 0);
        let len = next("no length")? as usize;
        if len == 0 || len > MAX_WORDS {
            return Err(bad(&format!("a module of {len} words (1 to {MAX_WORDS})")));
        }
        let words = (0..len).map(|_| next("a module cut short")).collect::<Result<_>>()?;
        sources.push(Source { words, subgroup_size });
    }
    if next("").is_ok() {
        return Err(bad("bytes after the last module"));
    }
    Ok((uuid, sources))
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: &str = "0123456789abcdef0123456789abcdef";

    fn sources() -> Vec<Source> {
        vec![
            Source {
                words: vec![0x0723_0203, 7, 8],
                subgroup_size: Some(32),
            },
            Source {
                words: vec![0x0723_0203],
                subgroup_size: None,
            },
        ]
    }

    #[test]
    fn a_request_reads_back_as_written() {
        let (uuid, back) = decode(&encode(UUID, &sources())).unwrap();
        assert_eq!(uuid, UUID);
        assert_eq!(back.len(), 2);
        for (a, b) in back.iter().zip(sources()) {
            assert_eq!((&a.words, a.subgroup_size), (&b.words, b.subgroup_size));
        }
    }

    #[test]
    fn a_damaged_request_is_an_error() {
        let good = encode(UUID, &sources());
        for cut in [0, 31, 32, 35, 36, 44, good.len() - 4, good.len() - 1] {
            assert!(decode(&good[..cut]).is_err(), "cut to {cut} bytes");
        }
        let mut longer = good.clone();
        longer.extend_from_slice(&[0; 4]);
        assert!(decode(&longer).is_err(), "a word appended");
        let mut not_hex = good.clone();
        not_hex[3] = b'g';
        assert!(decode(&not_hex).is_err(), "a UUID that is not hex");
        let mut huge = good.clone();
        huge[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&huge).is_err(), "a count beyond the bytes");
        let mut long_module = good;
        long_module[40..44].copy_from_slice(&(MAX_WORDS as u32 + 1).to_le_bytes());
        assert!(decode(&long_module).is_err(), "a module over the limit");
        assert!(decode(&encode(UUID, &[])).is_err(), "no pipelines");
    }

    #[test]
    fn frames_read_back_and_a_damaged_one_is_an_error() {
        let mut stream = Vec::new();
        write_frame(&mut stream, b"first").unwrap();
        write_frame(&mut stream, b"").unwrap();
        let mut input = &stream[..];
        assert_eq!(read_frame(&mut input).unwrap(), Some(b"first".to_vec()));
        assert_eq!(read_frame(&mut input).unwrap(), Some(Vec::new()));
        assert_eq!(read_frame(&mut input).unwrap(), None, "the end of the stream");
        let one = &stream[..stream.len() - 32];
        for cut in [1, 8, 9, one.len() - 1] {
            assert!(read_frame(&mut &one[..cut]).is_err(), "cut to {cut} bytes");
        }
        let mut flipped = one.to_vec();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(read_frame(&mut &flipped[..]).is_err(), "a payload byte flipped");
        let mut huge = one.to_vec();
        huge[..8].copy_from_slice(&(MAX_FRAME + 1).to_le_bytes());
        assert!(read_frame(&mut &huge[..]).is_err(), "a length over the limit");
    }
}
