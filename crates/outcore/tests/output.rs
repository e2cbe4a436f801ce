//! Result writers: Graphalytics text, TSV, CSV and Parquet, sorted by original id.

use std::io::Read;
use std::path::Path;

use outcore::algo::{AlgorithmResult, ValueColumn};
use outcore::output::{
    format_float, format_hops, format_value, write_result, write_result_with, OutputFormat, OutputOptions, OutputTarget,
};
use outcore::store::{build_in_memory, InMemoryGraph, OriginalId, OriginalIds, Store};

#[test]
fn floats_are_printed_like_c_percent_point_15e() {
    let cases = [
        (0.1477629166666667, "1.477629166666667e-01"),
        (0.0, "0.000000000000000e+00"),
        (-0.0, "-0.000000000000000e+00"),
        (0.8300000000000001, "8.300000000000001e-01"),
        (0.83, "8.300000000000000e-01"),
        (0.05, "5.000000000000000e-02"),
        (1.0e100, "1.000000000000000e+100"),
        (1.0e-100, "1.000000000000000e-100"),
        (-2.5, "-2.500000000000000e+00"),
        (123456.789, "1.234567890000000e+05"),
        (1.0 / 3.0, "3.333333333333333e-01"),
        (f64::MAX, "1.797693134862316e+308"),
        (5e-324, "4.940656458412465e-324"),
        // Exact ties round half to even, as glibc's printf does.
        (2000000000000000.5, "2.000000000000000e+15"),
        (2000000000000001.5, "2.000000000000002e+15"),
        (f64::INFINITY, "infinity"),
        (f64::NEG_INFINITY, "-infinity"),
        (f64::NAN, "nan"),
    ];
    for (value, expected) in cases {
        assert_eq!(format_float(value), expected, "{value:e}");
    }
    assert_eq!(format_hops(u64::MAX), "9223372036854775807");
    assert_eq!(format_hops(0), "0");
    assert_eq!(format_hops(17), "17");
}

#[test]
fn format_names_parse_with_helpful_errors() {
    assert_eq!(OutputFormat::parse("text").unwrap(), OutputFormat::Text);
    assert_eq!(OutputFormat::parse("CSV").unwrap(), OutputFormat::Csv);
    assert_eq!(OutputFormat::parse("tsv").unwrap(), OutputFormat::Tsv);
    let error = OutputFormat::parse("xml").unwrap_err().to_string();
    assert!(error.contains("xml") && error.contains("text, tsv, csv"), "{error}");
    #[cfg(feature = "parquet")]
    assert_eq!(OutputFormat::parse("parquet").unwrap(), OutputFormat::Parquet);
    #[cfg(not(feature = "parquet"))]
    {
        let error = OutputFormat::parse("parquet").unwrap_err().to_string();
        assert!(error.contains("`parquet` cargo feature"), "{error}");
    }
    assert_eq!(OutputFormat::from_path(Path::new("r.csv.gz")), Some(OutputFormat::Csv));
    assert_eq!(OutputFormat::from_path(Path::new("r.parquet")), Some(OutputFormat::Parquet));
    assert_eq!(OutputFormat::from_path(Path::new("r.txt")), Some(OutputFormat::Text));
    assert_eq!(OutputFormat::from_path(Path::new("r")), None);
    assert_eq!(OutputTarget::from_arg("-"), OutputTarget::Stdout);
}

/// A store whose original ids are given out of order: 30, 5, 1000, 7, 12 (12 isolated).
fn u64_store(dir: &Path) -> Store {
    let graph = InMemoryGraph {
        vertices: OriginalIds::U64(vec![30, 5, 1000, 7, 12]),
        edges: vec![(1, 3, 1.0), (3, 0, 1.0), (0, 2, 1.0)],
        directed: true,
        weighted: false,
    };
    build_in_memory(&dir.join("store"), &graph).expect("store")
}

/// Builds a column in dense order from values given per original id.
fn by_original<T: Clone>(store: &Store, values: &[(u64, T)]) -> Vec<T> {
    let ids = store.ids().unwrap();
    let mut column: Vec<Option<T>> = vec![None; ids.len() as usize];
    for (original, value) in values {
        let dense = ids.dense(&OriginalId::U64(*original)).unwrap().expect("vertex in store");
        column[dense as usize] = Some(value.clone());
    }
    column.into_iter().map(|v| v.expect("every vertex has a value")).collect()
}

fn dense_of(store: &Store, original: u64) -> u64 {
    store.ids().unwrap().dense(&OriginalId::U64(original)).unwrap().unwrap()
}

fn sample_result(store: &Store) -> AlgorithmResult {
    let hops = by_original(store, &[(5, 0u64), (7, 1), (30, 2), (1000, 3), (12, u64::MAX)]);
    let rank = by_original(store, &[(5, 0.05), (7, 0.1477629166666667), (30, 0.0), (1000, 1e100), (12, f64::INFINITY)]);
    let label_5 = dense_of(store, 5);
    let label_12 = dense_of(store, 12);
    let labels = by_original(store, &[(5, label_5), (7, label_5), (30, label_5), (1000, label_5), (12, label_12)]);
    let count = by_original(store, &[(5, 1u64), (7, 2), (30, 3), (1000, 4), (12, 0)]);
    AlgorithmResult {
        algorithm: "sample".into(),
        columns: vec![
            ("depth".into(), ValueColumn::Hops(hops)),
            ("rank".into(), ValueColumn::Float(rank)),
            ("component".into(), ValueColumn::Label(labels)),
            ("triangles".into(), ValueColumn::Count(count)),
        ],
        summary: Default::default(),
    }
}

fn read_file(path: &Path) -> String {
    let mut text = String::new();
    let file = std::fs::File::open(path).unwrap();
    if path.to_string_lossy().ends_with(".gz") {
        flate2::read::GzDecoder::new(file).read_to_string(&mut text).unwrap();
    } else if path.to_string_lossy().ends_with(".zst") {
        zstd::Decoder::new(file).unwrap().read_to_string(&mut text).unwrap();
    } else {
        std::io::BufReader::new(file).read_to_string(&mut text).unwrap();
    }
    text
}

fn write_to_file(
    store: &Store,
    result: &AlgorithmResult,
    name: &str,
    format: OutputFormat,
    options: &OutputOptions,
) -> String {
    let path = store.dir().parent().unwrap().join(name);
    let rows = write_result_with(store, result, &OutputTarget::File(path.clone()), format, options).unwrap();
    assert_eq!(rows, store.num_vertices());
    read_file(&path)
}

#[test]
fn text_output_is_graphalytics_sorted_by_original_id() {
    let dir = tempfile::tempdir().unwrap();
    let store = u64_store(dir.path());
    let full = sample_result(&store);
    let single = AlgorithmResult { columns: vec![full.columns[0].clone()], ..full.clone() };
    let path = dir.path().join("bfs.txt");
    assert_eq!(write_result(&store, &single, &OutputTarget::File(path.clone()), OutputFormat::Text).unwrap(), 5);
    assert_eq!(read_file(&path), "5 0\n7 1\n12 9223372036854775807\n30 2\n1000 3\n");

    let text = write_to_file(&store, &full, "all.txt", OutputFormat::Text, &OutputOptions::default());
    assert_eq!(
        text,
        "5 0 5.000000000000000e-02 5 1\n\
         7 1 1.477629166666667e-01 5 2\n\
         12 9223372036854775807 infinity 12 0\n\
         30 2 0.000000000000000e+00 5 3\n\
         1000 3 1.000000000000000e+100 5 4\n"
    );
    // Compressed by name.
    assert_eq!(write_to_file(&store, &full, "all.txt.gz", OutputFormat::Text, &OutputOptions::default()), text);
    assert_eq!(write_to_file(&store, &full, "all.txt.zst", OutputFormat::Text, &OutputOptions::default()), text);

    // format_value spells single values the same way.
    let ids = store.ids().unwrap();
    let d12 = dense_of(&store, 12);
    let spelled: Vec<String> = full.columns.iter().map(|(_, c)| format_value(&ids, c, d12).unwrap()).collect();
    assert_eq!(spelled, ["9223372036854775807", "infinity", "12", "0"]);
}

#[test]
fn tsv_and_csv_have_headers_unless_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let store = u64_store(dir.path());
    let result = sample_result(&store);
    let tsv = write_to_file(&store, &result, "r.tsv", OutputFormat::Tsv, &OutputOptions::default());
    let mut lines = tsv.lines();
    assert_eq!(lines.next(), Some("vertex\tdepth\trank\tcomponent\ttriangles"));
    assert_eq!(lines.next(), Some("5\t0\t5.000000000000000e-02\t5\t1"));
    assert_eq!(tsv.lines().count(), 6);

    let csv = write_to_file(&store, &result, "r.csv", OutputFormat::Csv, &OutputOptions::default());
    assert_eq!(csv.lines().next(), Some("vertex,depth,rank,component,triangles"));
    assert_eq!(csv.lines().nth(4), Some("30,2,0.000000000000000e+00,5,3"));

    let no_header = OutputOptions { header: false, ..OutputOptions::default() };
    let csv = write_to_file(&store, &result, "r2.csv", OutputFormat::Csv, &no_header);
    assert_eq!(csv.lines().next(), Some("5,0,5.000000000000000e-02,5,1"));
    assert_eq!(csv.lines().count(), 5);
}

fn string_store(dir: &Path) -> Store {
    let graph = InMemoryGraph {
        vertices: OriginalIds::Str(vec!["carol".into(), "a,b".into(), "bob \"the\" builder".into(), "alice".into()]),
        edges: vec![(0, 1, 1.0), (1, 2, 1.0)],
        directed: false,
        weighted: false,
    };
    build_in_memory(&dir.join("store"), &graph).expect("store")
}

fn string_result(store: &Store) -> AlgorithmResult {
    let ids = store.ids().unwrap();
    let dense = |s: &str| ids.dense(&OriginalId::Str(s.into())).unwrap().unwrap();
    let mut labels = vec![0u64; 4];
    let mut degree = vec![0u64; 4];
    for (name, label, d) in
        [("alice", "alice", 0), ("a,b", "a,b", 2), ("bob \"the\" builder", "a,b", 1), ("carol", "a,b", 1)]
    {
        labels[dense(name) as usize] = dense(label);
        degree[dense(name) as usize] = d;
    }
    AlgorithmResult {
        algorithm: "wcc".into(),
        columns: vec![("component".into(), ValueColumn::Label(labels)), ("degree".into(), ValueColumn::Count(degree))],
        summary: Default::default(),
    }
}

/// The text formats format rows in chunks on all threads and write each chunk while the next
/// one is formatted: any chunking writes the same bytes, in u64 and string stores.
#[test]
fn every_chunking_writes_the_same_text() {
    let dir = tempfile::tempdir().unwrap();
    let (u64s, strings) = (u64_store(&dir.path().join("u")), string_store(&dir.path().join("s")));
    let cases = [(&u64s, sample_result(&u64s)), (&strings, string_result(&strings))];
    for (store, result) in &cases {
        for format in [OutputFormat::Tsv, OutputFormat::Csv] {
            let whole = write_to_file(store, result, "whole", format, &OutputOptions::default());
            for chunk_rows in [1, 2, 3] {
                let options = OutputOptions { chunk_rows, ..OutputOptions::default() };
                assert_eq!(
                    write_to_file(store, result, "chunked", format, &options),
                    whole,
                    "{format:?} by {chunk_rows}"
                );
            }
        }
    }
}

#[test]
fn string_ids_are_sorted_quoted_in_csv_and_refused_where_they_cannot_fit() {
    let dir = tempfile::tempdir().unwrap();
    let store = string_store(dir.path());
    let result = string_result(&store);
    let csv = write_to_file(&store, &result, "r.csv", OutputFormat::Csv, &OutputOptions::default());
    assert_eq!(
        csv,
        "vertex,component,degree\n\
         \"a,b\",\"a,b\",2\n\
         alice,alice,0\n\
         \"bob \"\"the\"\" builder\",\"a,b\",1\n\
         carol,\"a,b\",1\n"
    );
    let tsv = write_to_file(&store, &result, "r.tsv", OutputFormat::Tsv, &OutputOptions::default());
    assert_eq!(tsv.lines().nth(3), Some("bob \"the\" builder\ta,b\t1"));

    // "bob ..." has spaces: the text format cannot hold it, and the failed file is not left behind.
    let path = dir.path().join("r.txt");
    let error = write_result(&store, &result, &OutputTarget::File(path.clone()), OutputFormat::Text).unwrap_err();
    assert!(error.to_string().contains("bob") && error.to_string().contains("csv"), "{error}");
    assert!(!path.exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(leftovers.iter().all(|n| !n.to_string_lossy().contains("partial")), "{leftovers:?}");
}

#[test]
fn results_that_do_not_fit_the_store_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = u64_store(dir.path());
    let short = AlgorithmResult {
        algorithm: "x".into(),
        columns: vec![("v".into(), ValueColumn::Count(vec![1, 2]))],
        summary: Default::default(),
    };
    let error =
        write_result(&store, &short, &OutputTarget::File(dir.path().join("x.txt")), OutputFormat::Text).unwrap_err();
    assert!(error.to_string().contains("2 values") && error.to_string().contains("5 vertices"), "{error}");
    let bad_label = AlgorithmResult {
        algorithm: "x".into(),
        columns: vec![("label".into(), ValueColumn::Label(vec![0, 1, 2, 3, 99]))],
        summary: Default::default(),
    };
    assert!(
        write_result(&store, &bad_label, &OutputTarget::File(dir.path().join("y.txt")), OutputFormat::Text).is_err()
    );
    assert!(!dir.path().join("y.txt").exists());
}

#[test]
fn a_result_without_columns_lists_the_vertices() {
    let dir = tempfile::tempdir().unwrap();
    let store = u64_store(dir.path());
    let empty = AlgorithmResult { algorithm: "ids".into(), ..Default::default() };
    assert_eq!(
        write_to_file(&store, &empty, "ids.txt", OutputFormat::Text, &OutputOptions::default()),
        "5\n7\n12\n30\n1000\n"
    );
}

#[cfg(feature = "parquet")]
mod parquet_output {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::{Field, RowAccessor};

    fn read_rows(path: &Path) -> (usize, Vec<parquet::record::Row>) {
        let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
        let groups = reader.metadata().num_row_groups();
        let rows = reader.get_row_iter(None).unwrap().map(|r| r.unwrap()).collect();
        (groups, rows)
    }

    #[test]
    fn parquet_round_trips_in_row_groups() {
        let dir = tempfile::tempdir().unwrap();
        let store = u64_store(dir.path());
        let result = sample_result(&store);
        let path = dir.path().join("r.parquet");
        let options = OutputOptions { row_group_rows: 2, ..OutputOptions::default() };
        let rows =
            write_result_with(&store, &result, &OutputTarget::File(path.clone()), OutputFormat::Parquet, &options)
                .unwrap();
        assert_eq!(rows, 5);
        let (groups, rows) = read_rows(&path);
        assert_eq!(groups, 3);
        let vertices: Vec<u64> = rows.iter().map(|r| r.get_ulong(0).unwrap()).collect();
        assert_eq!(vertices, [5, 7, 12, 30, 1000]);
        let names: Vec<&str> = rows[0].get_column_iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["vertex", "depth", "rank", "component", "triangles"]);
        // Unreachable depth is null; infinity stays infinity; labels are original ids.
        let row_12 = &rows[2];
        assert!(matches!(row_12.get_column_iter().nth(1).unwrap().1, Field::Null));
        assert_eq!(row_12.get_double(2).unwrap(), f64::INFINITY);
        assert_eq!(row_12.get_ulong(3).unwrap(), 12);
        assert_eq!(rows[1].get_long(1).unwrap(), 1);
        assert_eq!(rows[1].get_double(2).unwrap(), 0.1477629166666667);
        assert_eq!(rows[4].get_ulong(3).unwrap(), 5);
        assert_eq!(rows[4].get_ulong(4).unwrap(), 4);
    }

    #[test]
    fn parquet_string_ids_are_utf8() {
        let dir = tempfile::tempdir().unwrap();
        let store = string_store(dir.path());
        let result = string_result(&store);
        let path = dir.path().join("r.parquet");
        write_result(&store, &result, &OutputTarget::File(path.clone()), OutputFormat::Parquet).unwrap();
        let (groups, rows) = read_rows(&path);
        assert_eq!(groups, 1);
        let pairs: Vec<(String, String)> =
            rows.iter().map(|r| (r.get_string(0).unwrap().clone(), r.get_string(1).unwrap().clone())).collect();
        assert_eq!(
            pairs,
            [
                ("a,b".to_string(), "a,b".to_string()),
                ("alice".into(), "alice".into()),
                ("bob \"the\" builder".into(), "a,b".into()),
                ("carol".into(), "a,b".into())
            ]
        );
    }

    #[test]
    fn parquet_refuses_compression_suffixes_and_clashing_names() {
        let dir = tempfile::tempdir().unwrap();
        let store = u64_store(dir.path());
        let result = sample_result(&store);
        let error =
            write_result(&store, &result, &OutputTarget::File(dir.path().join("r.parquet.gz")), OutputFormat::Parquet)
                .unwrap_err();
        assert!(error.to_string().contains("compressed inside"), "{error}");
        let clash = AlgorithmResult { columns: vec![("vertex".into(), ValueColumn::Count(vec![0; 5]))], ..result };
        let error =
            write_result(&store, &clash, &OutputTarget::File(dir.path().join("c.parquet")), OutputFormat::Parquet)
                .unwrap_err();
        assert!(error.to_string().contains("'vertex'"), "{error}");
        assert!(!dir.path().join("c.parquet").exists());
    }
}
