use super::*;
use proptest::prelude::*;

fn files_in(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

/// A record of `size` (≥ 8) bytes: key in the first 8, then a filler naming run and position.
fn record(key: u64, run: usize, seq: usize, size: usize) -> Vec<u8> {
    let mut bytes = key.to_le_bytes().to_vec();
    bytes.extend((0..size - 8).map(|i| (run * 31 + seq * 7 + i) as u8));
    bytes
}

fn key_of(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes[..8].try_into().unwrap())
}

fn spill(dir: &Path, name: &str, records: &[Vec<u8>], buffer: usize, counters: &IoCounters) -> SpillFile {
    let mut writer = SpillWriter::create(dir, "test", name, buffer, counters.clone()).unwrap();
    for r in records {
        writer.write(r).unwrap();
    }
    writer.finish().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn merge_equals_a_stable_sort_of_all_runs(
        size in 8usize..40,
        keys in proptest::collection::vec(proptest::collection::vec(0u64..20, 0..60), 0..6),
        write_buffer in 1usize..200,
        read_buffer in 1usize..200,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let counters = IoCounters::new();
        let mut all = Vec::new();
        let mut runs = Vec::new();
        for (run, keys) in keys.iter().enumerate() {
            let mut keys = keys.clone();
            keys.sort_unstable();
            let records: Vec<Vec<u8>> = keys.iter().enumerate().map(|(seq, &k)| record(k, run, seq, size)).collect();
            let file = spill(dir.path(), &format!("{run}"), &records, write_buffer, &counters);
            runs.push(RecordRun::new(file.into_reader(read_buffer).unwrap(), size, key_of));
            all.extend(records);
        }
        // Runs in order, then a stable sort: equal keys stay in run order.
        all.sort_by_key(|r| key_of(r));
        let mut merge = Merge::new(runs).unwrap();
        let mut merged = Vec::new();
        while let Some((&key, run)) = merge.top() {
            prop_assert_eq!(key, key_of(run.head()));
            merged.push(run.head().to_vec());
            prop_assert_eq!(merge.advance_top().unwrap(), Some(key));
        }
        prop_assert_eq!(merge.advance_top().unwrap(), None);
        prop_assert_eq!(&merged, &all);
        let bytes = (all.len() * size) as u64;
        prop_assert_eq!(counters.snapshot().bytes_written, bytes);
        prop_assert_eq!(counters.snapshot().bytes_read, bytes);
        drop(merge);
        prop_assert_eq!(files_in(dir.path()), 0, "merged runs are removed");
    }

    #[test]
    fn range_reads_equal_what_was_written(
        size in 1usize..40,
        count in 0usize..200,
        buffer in 1usize..300,
        ranges in proptest::collection::vec((0usize..200, 0usize..200), 1..8),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = (0..count * size).map(|i| (i * 13 + 5) as u8).collect();
        let records: Vec<Vec<u8>> = bytes.chunks(size).map(<[u8]>::to_vec).collect();
        let file = spill(dir.path(), "ranges", &records, buffer, &IoCounters::new());
        let mut out = Vec::new();
        for (a, b) in ranges {
            let (first, end) = (a.min(b).min(count), a.max(b).min(count));
            file.read_range(size, first as u64..end as u64, &mut out).unwrap();
            prop_assert_eq!(&out[..], &bytes[first * size..end * size]);
        }
        let mut reader = file.into_reader(buffer).unwrap();
        for r in &records {
            prop_assert_eq!(reader.next_record(size).unwrap(), Some(&r[..]));
        }
        prop_assert_eq!(reader.next_record(size).unwrap(), None);
    }
}

#[test]
fn writes_are_whole_buffers_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let counters = IoCounters::new();
    // 12-byte records through a 36-byte buffer: 10 records are three full writes and one of 12.
    let records: Vec<Vec<u8>> = (0..10).map(|k| record(k, 0, 0, 12)).collect();
    let file = spill(dir.path(), "counted", &records, 36, &counters);
    let written = counters.snapshot();
    assert_eq!((written.bytes_written, written.write_requests), (120, 4));
    let mut reader = file.into_reader(48).unwrap();
    while reader.next_record(12).unwrap().is_some() {}
    // 120 bytes through a 48-byte buffer: three reads with data (the empty one at the end is
    // not a request that moved bytes).
    let read = counters.snapshot();
    assert_eq!((read.bytes_read, read.read_requests), (120, 3));
}

#[test]
fn a_file_that_ends_inside_a_record_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<Vec<u8>> = (0..5).map(|k| record(k, 0, 0, 16)).collect();
    let file = spill(dir.path(), "short", &records, 64, &IoCounters::new());
    let path = file.path().to_path_buf();
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(5 * 16 - 3).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let message = file.read_range(16, 3..5, &mut Vec::new()).unwrap_err().to_string();
    assert!(message.contains(&name) && message.contains("truncated"), "{message}");
    let mut reader = file.into_reader(7).unwrap();
    for _ in 0..4 {
        reader.next_record(16).unwrap().unwrap();
    }
    let message = reader.next_record(16).unwrap_err().to_string();
    assert!(message.contains(&name) && message.contains("ends inside a record"), "{message}");
    drop(reader);
    assert_eq!(files_in(dir.path()), 0);
}

#[test]
fn a_merge_stops_at_a_damaged_run_with_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let counters = IoCounters::new();
    let a = spill(dir.path(), "a", &[record(1, 0, 0, 8), record(3, 0, 1, 8)], 8, &counters);
    let b = spill(dir.path(), "b", &[record(2, 1, 0, 8)], 8, &counters);
    std::fs::OpenOptions::new().write(true).open(a.path()).unwrap().set_len(13).unwrap();
    let runs = vec![a, b].into_iter().map(|f| RecordRun::new(f.into_reader(64).unwrap(), 8, key_of)).collect();
    let mut merge = Merge::new(runs).unwrap();
    assert_eq!(merge.top().map(|(&key, _)| key), Some(1));
    let message = merge.advance_top().unwrap_err().to_string();
    assert!(message.contains("test@") && message.contains("-a"), "{message}");
    assert_eq!(merge.top().map(|(&key, _)| key), Some(2), "the other run goes on");
}

#[test]
fn creating_in_a_removed_directory_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    std::fs::remove_dir(&gone).unwrap();
    let error = SpillWriter::create(&gone, "kind", "rest.spill", 64, IoCounters::new()).err().unwrap();
    let message = error.to_string();
    assert!(message.contains(&gone.join(work_name("kind", "rest.spill")).display().to_string()), "{message}");
}

#[test]
fn spill_files_are_removed_when_dropped_and_read_files_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let counters = IoCounters::new();
    let mut unfinished = SpillWriter::create(dir.path(), "test", "unfinished", 4, counters.clone()).unwrap();
    unfinished.write(&[1; 10]).unwrap();
    assert!(unfinished.path().file_name().unwrap().to_string_lossy().starts_with("test@"));
    let finished = spill(dir.path(), "finished", &[vec![2; 10]], 4, &counters);
    assert_eq!(files_in(dir.path()), 2);
    drop(unfinished);
    drop(finished);
    assert_eq!(files_in(dir.path()), 0);

    let kept = dir.path().join("kept");
    std::fs::write(&kept, [3u8; 24]).unwrap();
    let mut reader = SpillReader::open(&kept, 16, counters).unwrap();
    assert_eq!(reader.next_record(24).unwrap(), Some(&[3u8; 24][..]), "the buffer grows for a large record");
    drop(reader);
    assert!(kept.exists());
    let adopted = SpillFile::adopt(kept.clone(), IoCounters::new());
    drop(adopted);
    assert!(!kept.exists());
}
