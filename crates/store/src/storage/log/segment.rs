//! Segment files and the frames in them: names, the header, encoding a
//! record as a frame, reading a segment back (where it ends and why), and
//! telling a torn final write from damage. The bytes are in
//! docs/storage.md.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::storage::record::LogOp;

/// First bytes of every segment file.
pub const SEGMENT_MAGIC: &[u8; 8] = b"PDMLOG\0\x01";
/// `len | crc | lsn`.
pub const FRAME_HEADER: usize = 16;
/// Largest payload a frame may carry; a length above it is damage, not data.
pub const MAX_PAYLOAD: usize = 1 << 30;

pub fn segment_name(start_lsn: u64) -> String {
    format!("log-{start_lsn:020}.pdml")
}

/// Segments in `dir`, by starting LSN.
pub fn list_segments(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    crate::storage::list_numbered(dir, "log-", ".pdml")
}

/// Appends one frame for `op` with `lsn` to `out`.
pub fn encode_frame(out: &mut Vec<u8>, lsn: u64, op: &LogOp) {
    let start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER]);
    op.encode(out);
    let payload_len = out.len() - start - FRAME_HEADER;
    out[start + 8..start + 16].copy_from_slice(&lsn.to_le_bytes());
    let crc = crc32c::crc32c(&out[start + 8..]);
    out[start..start + 4].copy_from_slice(&(payload_len as u32).to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// How reading a segment ended.
#[derive(Debug, PartialEq)]
pub enum SegmentEnd {
    /// Every byte was a whole, valid frame.
    Clean { last_lsn: Option<u64> },
    /// Bytes from `valid_len` on are not a valid frame (a torn or damaged
    /// tail); `why` says what was wrong.
    Damaged {
        last_lsn: Option<u64>,
        valid_len: u64,
        file_len: u64,
        why: String,
    },
}

/// Reads every valid frame of a segment in order, calling `f(lsn, op)`.
pub fn read_segment(path: &Path, f: impl FnMut(u64, LogOp)) -> io::Result<SegmentEnd> {
    let mut file = File::open(path)?;
    let file_len = file.metadata()?.len();
    let mut data = Vec::with_capacity(file_len as usize);
    file.read_to_end(&mut data)?;
    Ok(parse_segment(&data, f))
}

/// [`read_segment`] of bytes already in memory.
pub fn parse_segment(data: &[u8], mut f: impl FnMut(u64, LogOp)) -> SegmentEnd {
    let file_len = data.len() as u64;
    let damaged = |last_lsn, valid_len: usize, why: String| SegmentEnd::Damaged {
        last_lsn,
        valid_len: valid_len as u64,
        file_len,
        why,
    };
    if data.len() < SEGMENT_MAGIC.len() || &data[..SEGMENT_MAGIC.len()] != SEGMENT_MAGIC {
        if let Some(v) = other_version(data) {
            return damaged(
                None,
                0,
                format!("segment format version {v} is not supported"),
            );
        }
        return damaged(None, 0, "segment header missing or wrong".into());
    }
    let mut pos = SEGMENT_MAGIC.len();
    let mut last_lsn: Option<u64> = None;
    while pos < data.len() {
        let rest = &data[pos..];
        if rest.len() < FRAME_HEADER {
            return damaged(last_lsn, pos, "incomplete frame header".into());
        }
        let len = u32::from_le_bytes(rest[0..4].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(rest[4..8].try_into().unwrap());
        let lsn = u64::from_le_bytes(rest[8..16].try_into().unwrap());
        if len > MAX_PAYLOAD {
            return damaged(last_lsn, pos, format!("frame length {len} too large"));
        }
        if rest.len() < FRAME_HEADER + len {
            return damaged(last_lsn, pos, "incomplete frame".into());
        }
        if crc32c::crc32c(&rest[8..FRAME_HEADER + len]) != crc {
            return damaged(last_lsn, pos, "checksum mismatch".into());
        }
        if last_lsn.is_some_and(|l| lsn != l + 1) {
            return damaged(last_lsn, pos, format!("LSN {lsn} out of sequence"));
        }
        let Some(op) = LogOp::decode(&rest[FRAME_HEADER..FRAME_HEADER + len]) else {
            return damaged(last_lsn, pos, "undecodable record".into());
        };
        f(lsn, op);
        last_lsn = Some(lsn);
        pos += FRAME_HEADER + len;
    }
    SegmentEnd::Clean { last_lsn }
}

/// The format version of a segment header that is intact but for a
/// version this podium does not read (a newer podium wrote it).
pub fn other_version(data: &[u8]) -> Option<u8> {
    let n = SEGMENT_MAGIC.len();
    (data.len() >= n
        && data[..n - 1] == SEGMENT_MAGIC[..n - 1]
        && data[n - 1] != SEGMENT_MAGIC[n - 1])
        .then(|| data[n - 1])
}

/// The frame starting at `at`, as `(payload length, LSN)`, if it is whole
/// and its checksum holds and its LSN is within `lsns`. The LSN is checked
/// before the CRC, so a stretch of garbage costs a comparison per byte,
/// not a checksum.
pub fn whole_frame_at(
    data: &[u8],
    at: usize,
    lsns: std::ops::RangeInclusive<u64>,
) -> Option<(usize, u64)> {
    let head = data.get(at..at.checked_add(FRAME_HEADER)?)?;
    let len = u32::from_le_bytes(head[0..4].try_into().unwrap()) as usize;
    let crc = u32::from_le_bytes(head[4..8].try_into().unwrap());
    let lsn = u64::from_le_bytes(head[8..16].try_into().unwrap());
    // A length that runs past the end of the file cannot be a frame that
    // was written whole: no checksum is computed for it.
    let end = at + FRAME_HEADER + len;
    if len > MAX_PAYLOAD || end > data.len() || !lsns.contains(&lsn) {
        return None;
    }
    (crc32c::crc32c(&data[at + 8..end]) == crc).then_some((len, lsn))
}

/// Whole frames found after the first invalid one of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Beyond {
    /// Where the first of them starts.
    pub offset: u64,
    /// How many there are.
    pub frames: u64,
    /// Their highest LSN.
    pub last_lsn: u64,
}

/// Looks for whole frames after the invalid frame at `bad` in a segment's
/// bytes. A crash can only tear the final write, which is the end of the
/// file, so any whole frame after `bad` (or a whole frame at `bad` itself,
/// invalid only by its LSN or its payload) means the bytes at `bad` are
/// damage, not a torn tail. `expected` is the LSN the frame at `bad` should
/// hold; a candidate after it must hold an LSN from there up to what the
/// rest of the file could hold (every frame is at least `FRAME_HEADER`
/// bytes).
///
/// Bytes are tried one by one where nothing valid is found, and a whole
/// frame is stepped over, so the scan is one pass over the file plus the
/// checksums of candidates whose length fits in the file and whose LSN is
/// plausible. A `bad` inside the segment header (a damaged header) scans
/// from the header's end: no frame starts before it.
pub fn frames_beyond(data: &[u8], bad: usize, expected: u64) -> Option<Beyond> {
    let bad = bad.max(SEGMENT_MAGIC.len().min(data.len()));
    let room = (data.len().saturating_sub(bad) / FRAME_HEADER) as u64;
    let lsns = expected..=expected.saturating_add(room);
    let mut found: Option<Beyond> = None;
    let mut note = |at: usize, lsn: u64| {
        let b = found.get_or_insert(Beyond {
            offset: at as u64,
            frames: 0,
            last_lsn: lsn,
        });
        b.frames += 1;
        b.last_lsn = b.last_lsn.max(lsn);
    };
    let mut at = bad;
    // Whatever its LSN (a duplicate too), a whole frame was not torn.
    if let Some((len, lsn)) = whole_frame_at(data, bad, 0..=u64::MAX) {
        note(bad, lsn);
        at += FRAME_HEADER + len;
    } else {
        at += 1;
    }
    while at + FRAME_HEADER <= data.len() {
        match whole_frame_at(data, at, lsns.clone()) {
            Some((len, lsn)) => {
                note(at, lsn);
                at += FRAME_HEADER + len;
            }
            None => at += 1,
        }
    }
    found
}

/// Creates a segment file holding only the header, durably.
pub(super) fn create_segment(dir: &Path, start_lsn: u64) -> io::Result<File> {
    let path = dir.join(segment_name(start_lsn));
    let mut f = podium_core::private_fs::create(&path)?;
    f.write_all(SEGMENT_MAGIC)?;
    f.sync_all()?;
    sync_dir(dir)?;
    f.seek(SeekFrom::End(0))?;
    Ok(f)
}

pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::log::testutil::*;
    use crate::FsyncPolicy;
    use std::fs;

    #[test]
    fn torn_and_corrupt_tails_are_reported_where_they_start() {
        let dir = tmp("torn");
        let log = Log::open(&dir, 1, FsyncPolicy::Always, 0).unwrap();
        for i in 0..5 {
            log.append(&op(i));
        }
        log.close().unwrap();
        let path = list_segments(&dir).unwrap()[0].1.clone();
        let full = fs::read(&path).unwrap();
        // Record sizes are equal here: find the start of the last frame.
        let frame = (full.len() - SEGMENT_MAGIC.len()) / 5;
        let last = full.len() - frame;
        for cut in [last + 3, last + FRAME_HEADER, full.len() - 1] {
            fs::write(&path, &full[..cut]).unwrap();
            let mut n = 0;
            let end = read_segment(&path, |_, _| n += 1).unwrap();
            assert_eq!(n, 4);
            assert!(
                matches!(end, SegmentEnd::Damaged { valid_len, .. } if valid_len == last as u64),
                "{end:?}"
            );
        }
        let mut bad = full.clone();
        bad[last + FRAME_HEADER + 2] ^= 0x40;
        fs::write(&path, &bad).unwrap();
        let end = read_segment(&path, |_, _| {}).unwrap();
        assert!(matches!(end, SegmentEnd::Damaged { ref why, .. } if why.contains("checksum")));
        // A huge length prefix is damage, not an allocation.
        let mut huge = full[..last].to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        huge.extend_from_slice(&[0; 12]);
        fs::write(&path, &huge).unwrap();
        let end = read_segment(&path, |_, _| {}).unwrap();
        assert!(matches!(end, SegmentEnd::Damaged { ref why, .. } if why.contains("too large")));
    }

    /// Torn or damaged: what follows the first invalid frame decides.
    #[test]
    fn whole_frames_after_a_bad_one_mean_damage() {
        let dir = tmp("beyond");
        let log = Log::open(&dir, 1, FsyncPolicy::Always, 0).unwrap();
        for i in 0..5 {
            log.append(&op(i));
        }
        log.close().unwrap();
        let path = list_segments(&dir).unwrap()[0].1.clone();
        let full = fs::read(&path).unwrap();
        let frame = (full.len() - SEGMENT_MAGIC.len()) / 5;
        let at = |i: usize| SEGMENT_MAGIC.len() + i * frame;
        let bad_at = |data: &[u8]| match parse_segment(data, |_, _| {}) {
            SegmentEnd::Damaged {
                valid_len,
                last_lsn,
                ..
            } => (valid_len as usize, last_lsn.map_or(1, |l| l + 1)),
            e => panic!("{e:?}"),
        };
        // A flip in record 2: records 3 to 5 follow, whole.
        let mut flipped = full.clone();
        flipped[at(1) + FRAME_HEADER + 3] ^= 2;
        let (p, expected) = bad_at(&flipped);
        assert_eq!((p, expected), (at(1), 2));
        let b = frames_beyond(&flipped, p, expected).unwrap();
        assert_eq!((b.offset, b.frames, b.last_lsn), (at(2) as u64, 3, 5));
        // Torn inside the last record, with or without garbage after: none.
        for tail in [&[][..], &[0; 40], &[0xff; 9]] {
            let mut torn = full[..at(4) + 20].to_vec();
            torn.extend_from_slice(tail);
            let (p, expected) = bad_at(&torn);
            assert_eq!(frames_beyond(&torn, p, expected), None);
        }
        // A whole frame with an LSN already used (a second writer): damage.
        let mut dup = full.clone();
        dup.extend_from_slice(&full[at(0)..at(1)]);
        let (p, expected) = bad_at(&dup);
        assert_eq!((p, expected), (full.len(), 6));
        assert_eq!(frames_beyond(&dup, p, expected).unwrap().frames, 1);
        // A damaged length running past the end is not a candidate; the
        // frames after it still are.
        let mut long = full.clone();
        long[at(2) + 3] = 0x30;
        let (p, expected) = bad_at(&long);
        assert_eq!(frames_beyond(&long, p, expected).unwrap().last_lsn, 5);
    }
}
