//! Input parsers: every format, compression, auto-detection, and every kind of bad input.
//!
//! Fixtures live in `tests/data/inputs/`; variants (compressed, CRLF, damaged) are written to
//! temporary directories from them, so one fixture covers all its encodings.

use std::io::Write;
use std::path::{Path, PathBuf};

use outcore::ingest::parse::open_inputs;
use outcore::ingest::{ImportOptions, InputFormat, InputInfo, InputRecord, RawId};
use outcore::store::IdType;

// ---------------------------------------------------------------- helpers

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/inputs").join(name)
}

fn options() -> ImportOptions {
    ImportOptions::default()
}

fn with_format(format: InputFormat) -> ImportOptions {
    ImportOptions { format, ..ImportOptions::default() }
}

/// Everything a parse produced.
struct Parsed {
    records: Vec<InputRecord>,
    info: InputInfo,
    skipped: (u64, Vec<String>),
    bytes_consumed: u64,
}

impl Parsed {
    fn edges(&self) -> Vec<(u64, u64, Option<f64>)> {
        self.records
            .iter()
            .filter_map(|r| match r {
                InputRecord::Edge { src: RawId::U64(s), dst: RawId::U64(d), weight } => Some((*s, *d, *weight)),
                InputRecord::Edge { .. } => panic!("string id in u64 mode: {r:?}"),
                InputRecord::Vertex(_) => None,
            })
            .collect()
    }

    fn pairs(&self) -> Vec<(u64, u64)> {
        self.edges().into_iter().map(|(s, d, _)| (s, d)).collect()
    }

    fn vertices(&self) -> Vec<u64> {
        self.records
            .iter()
            .filter_map(|r| match r {
                InputRecord::Vertex(RawId::U64(v)) => Some(*v),
                InputRecord::Vertex(other) => panic!("string id in u64 mode: {other:?}"),
                InputRecord::Edge { .. } => None,
            })
            .collect()
    }
}

/// Reads all records in small batches (so batch boundaries fall everywhere).
fn try_parse(inputs: &[PathBuf], opts: &ImportOptions) -> outcore::Result<Parsed> {
    let (mut source, info) = open_inputs(inputs, opts)?;
    let mut records = Vec::new();
    loop {
        let before = records.len();
        let more = source.read_batch(&mut records, 3)?;
        assert!(records.len() - before <= 3, "read_batch appended more than asked");
        if !more {
            break;
        }
    }
    Ok(Parsed { records, info, skipped: source.skipped_lines(), bytes_consumed: source.bytes_consumed() })
}

fn parse(inputs: &[PathBuf], opts: &ImportOptions) -> Parsed {
    match try_parse(inputs, opts) {
        Ok(parsed) => parsed,
        Err(e) => panic!("parsing {inputs:?} failed: {e}"),
    }
}

fn parse_one(path: &Path) -> Parsed {
    parse(&[path.to_path_buf()], &options())
}

/// The error message of a parse that must fail.
fn error_of(inputs: &[PathBuf], opts: &ImportOptions) -> String {
    match try_parse(inputs, opts) {
        Ok(parsed) => panic!("parsing {inputs:?} should fail, got {} records", parsed.records.len()),
        Err(e) => e.to_string(),
    }
}

fn assert_contains(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "message {message:?} does not contain {part:?}");
    }
}

fn write(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).expect("write test file");
    path
}

fn gzip(content: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(content).expect("gzip");
    encoder.finish().expect("gzip")
}

fn zstd(content: &[u8]) -> Vec<u8> {
    zstd::encode_all(content, 3).expect("zstd")
}

fn read_fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).expect("read fixture")
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

// ---------------------------------------------------------------- edge lists

const SNAP_EDGES: [(u64, u64); 5] = [(1, 2), (2, 3), (3, 4), (4, 1), (5, 5)];

#[test]
fn edge_list_skips_comments_and_blank_lines_and_accepts_commas_tabs_and_extra_columns() {
    let parsed = parse_one(&fixture("snap.txt"));
    assert_eq!(parsed.pairs(), SNAP_EDGES);
    assert!(parsed.edges().iter().all(|e| e.2.is_none()), "unweighted by default");
    assert!(parsed.vertices().is_empty());
    assert_eq!(parsed.info.format_description, "SNAP/TSV edge list (detected from content)");
    assert_eq!(parsed.info.directed, None);
    assert_eq!(parsed.info.weighted, None);
    assert_eq!(parsed.info.files, vec![fixture("snap.txt")]);
}

#[test]
fn edge_list_with_crlf_line_endings_and_trailing_whitespace() {
    let dir = tempdir();
    let path = write(dir.path(), "crlf.tsv", b"# comment\r\n1 2 0.25 \r\n\r\n3\t4\t-1.5\t\r\n5,6,7\r\n");
    let opts = ImportOptions { weighted: Some(true), ..options() };
    let parsed = parse(&[path], &opts);
    assert_eq!(parsed.edges(), vec![(1, 2, Some(0.25)), (3, 4, Some(-1.5)), (5, 6, Some(7.0))]);
    assert_eq!(parsed.info.weighted, Some(true));
    assert_contains(&parsed.info.format_description, &["edge list with weights in the third column"]);
}

#[test]
fn last_line_without_newline_is_read() {
    let dir = tempdir();
    let path = write(dir.path(), "g.txt", b"1 2\n3 4");
    assert_eq!(parse_one(&path).pairs(), vec![(1, 2), (3, 4)]);
}

#[test]
fn utf8_byte_order_mark_is_ignored() {
    let dir = tempdir();
    let edges = write(dir.path(), "bom.txt", b"\xEF\xBB\xBF1 2\n3 4\n");
    assert_eq!(parse_one(&edges).pairs(), vec![(1, 2), (3, 4)]);
    let csv = write(dir.path(), "bom.csv", b"\xEF\xBB\xBFsrc,dst\n1,2\n");
    let opts = ImportOptions { src_col: Some("src".into()), ..options() };
    assert_eq!(parse(&[csv], &opts).pairs(), vec![(1, 2)]);
}

#[test]
fn edge_list_ids_at_the_limits_of_u64() {
    let dir = tempdir();
    let path = write(dir.path(), "g.txt", b"0 18446744073709551615\n00042 7\n");
    assert_eq!(parse_one(&path).pairs(), vec![(0, u64::MAX), (42, 7)]);
}

#[test]
fn lines_across_buffer_boundaries_and_very_long_lines() {
    // Several MiB: lines straddle the 1 MiB buffer, and one comment line is longer than it.
    let dir = tempdir();
    let mut content = Vec::new();
    let mut expected = Vec::new();
    for i in 0..300_000u64 {
        writeln!(content, "{} {}", i * 7919 % 1_000_003, i).expect("write");
        expected.push((i * 7919 % 1_000_003, i));
        if i == 150_000 {
            content.extend_from_slice(b"# ");
            content.extend_from_slice(&vec![b'x'; 3 << 20]);
            content.push(b'\n');
        }
    }
    let path = write(dir.path(), "big.txt", &content);
    let (mut source, info) = open_inputs(&[path], &options()).expect("open");
    let mut records = Vec::new();
    while source.read_batch(&mut records, 100_000).expect("read") {}
    let parsed = Parsed { records, info, skipped: (0, vec![]), bytes_consumed: source.bytes_consumed() };
    assert_eq!(parsed.pairs(), expected);
    assert_eq!(parsed.bytes_consumed, content.len() as u64);
    assert_eq!(parsed.info.total_bytes, content.len() as u64);
}

#[test]
fn several_inputs_are_read_in_order_and_sizes_add_up() {
    let dir = tempdir();
    let a = write(dir.path(), "a.txt", b"1 2\n2 3\n");
    let b = write(dir.path(), "b.txt", b"# second file\n7 8\n");
    let parsed = parse(&[a, b], &options());
    assert_eq!(parsed.pairs(), vec![(1, 2), (2, 3), (7, 8)]);
    assert_eq!(parsed.info.total_bytes, 8 + 18);
    assert_eq!(parsed.bytes_consumed, 8 + 18);
    assert_eq!(parsed.info.files.len(), 2);
    assert_contains(&parsed.info.format_description, &["SNAP/TSV edge list", "[2 inputs]"]);
}

// ---------------------------------------------------------------- CSV

#[test]
fn csv_with_header_and_quoted_fields() {
    let parsed = parse_one(&fixture("edges.csv"));
    // A column named "weight" declares weights.
    assert_eq!(parsed.edges(), vec![(1, 2, Some(0.5)), (2, 3, Some(1.5)), (3, 4, Some(2.5))]);
    assert_eq!(parsed.info.weighted, Some(true));
    assert_eq!(
        parsed.info.format_description,
        "CSV with a header row (source 'source', target 'target', weight 'weight') \
         (detected from the .csv extension and a header row)"
    );
}

#[test]
fn csv_columns_by_name_or_index() {
    let dir = tempdir();
    let path = write(dir.path(), "edges.csv", b"when,to,from,cost\n2001,2,1,0.5\n2002,3,2,1.5\n\n2003,1,\"3\",2.5\r\n");
    let opts = ImportOptions {
        src_col: Some("from".into()),
        dst_col: Some("1".into()),
        weight_col: Some("COST".into()),
        ..options()
    };
    let parsed = parse(std::slice::from_ref(&path), &opts);
    assert_eq!(parsed.edges(), vec![(1, 2, Some(0.5)), (2, 3, Some(1.5)), (3, 1, Some(2.5))]);

    let unweighted = ImportOptions { weighted: Some(false), ..opts.clone() };
    assert!(parse(std::slice::from_ref(&path), &unweighted).edges().iter().all(|e| e.2.is_none()));

    let bad_column = ImportOptions { src_col: Some("nope".into()), ..options() };
    let message = error_of(&[path], &bad_column);
    assert_contains(&message, &["edges.csv:1:", "--src-col 'nope'", "'when', 'to', 'from', 'cost'"]);
}

#[test]
fn csv_tab_separated_and_without_weight_column() {
    let dir = tempdir();
    let path = write(dir.path(), "e.csv", b"a\tb\n1\t2\n2\t3\n");
    let parsed = parse_one(&path);
    assert_eq!(parsed.edges(), vec![(1, 2, None), (2, 3, None)]);
    assert_contains(&parsed.info.format_description, &["tab-separated"]);

    let opts = ImportOptions { weighted: Some(true), ..options() };
    let message = error_of(&[path], &opts);
    assert_contains(&message, &["e.csv:1:", "only two columns", "--weight-col"]);
}

#[test]
fn csv_bad_rows() {
    let dir = tempdir();
    let short = write(dir.path(), "short.csv", b"src,dst\n1,2\n3\n");
    assert_contains(&error_of(&[short], &options()), &["short.csv:3:", "expected at least 2 columns, found 1: 3"]);
    let quote = write(dir.path(), "quote.csv", b"src,dst\n1,\"2\n");
    assert_contains(&error_of(&[quote], &options()), &["quote.csv:2:", "unterminated quoted field"]);
}

#[test]
fn csv_without_header_is_a_comma_separated_edge_list() {
    let dir = tempdir();
    let path = write(dir.path(), "plain.csv", b"1,2\n2,3\n");
    let parsed = parse_one(&path);
    assert_eq!(parsed.pairs(), vec![(1, 2), (2, 3)]);
    assert_contains(&parsed.info.format_description, &["edge list", "without a header row"]);
}

// ---------------------------------------------------------------- Matrix Market

#[test]
fn matrix_market_real_symmetric_keeps_isolated_vertices() {
    let parsed = parse_one(&fixture("graph.mtx"));
    assert_eq!(parsed.vertices(), vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(parsed.edges(), vec![(1, 2, Some(0.5)), (2, 3, Some(1.5)), (3, 1, Some(-2.0)), (4, 5, Some(300.0))]);
    assert_eq!(parsed.info.directed, Some(false));
    assert_eq!(parsed.info.weighted, Some(true));
    assert_eq!(
        parsed.info.format_description,
        "Matrix Market coordinate real symmetric (detected from the %%MatrixMarket header)"
    );
}

#[test]
fn matrix_market_pattern_general_rectangular() {
    let parsed = parse_one(&fixture("pattern.mtx"));
    assert_eq!(parsed.vertices(), vec![1, 2, 3, 4]);
    assert_eq!(parsed.edges(), vec![(1, 2, None), (2, 3, None), (3, 4, None)]);
    assert_eq!(parsed.info.directed, Some(true));
    assert_eq!(parsed.info.weighted, Some(false));

    let weighted = ImportOptions { weighted: Some(true), ..options() };
    assert_contains(&error_of(&[fixture("pattern.mtx")], &weighted), &["pattern.mtx:1:", "'pattern'", "no values"]);
}

#[test]
fn matrix_market_weights_can_be_ignored() {
    let opts = ImportOptions { weighted: Some(false), ..options() };
    let parsed = parse(&[fixture("graph.mtx")], &opts);
    assert!(parsed.edges().iter().all(|e| e.2.is_none()));
    assert_eq!(parsed.info.weighted, Some(false));
}

#[test]
fn matrix_market_entry_count_is_checked() {
    let dir = tempdir();
    let truncated =
        write(dir.path(), "short.mtx", b"%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 2\n2 3\n");
    assert_contains(
        &error_of(&[truncated], &options()),
        &["short.mtx:", "size line (line 2) declares 3 entries but the file ends after 2", "truncated"],
    );
    let too_many =
        write(dir.path(), "long.mtx", b"%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n2 3\n");
    assert_contains(&error_of(&[too_many], &options()), &["long.mtx:4:", "more entries than the 1 declared", "2 3"]);
}

#[test]
fn matrix_market_bad_entries_and_unsupported_kinds() {
    let dir = tempdir();
    let header = "%%MatrixMarket matrix coordinate integer general\n";
    let out_of_range = write(dir.path(), "range.mtx", format!("{header}3 3 1\n0 2 1\n").as_bytes());
    assert_contains(
        &error_of(&[out_of_range], &options()),
        &["range.mtx:3:", "row index 0 is out of range 1..=3", "0 2 1"],
    );
    let missing_value = write(dir.path(), "value.mtx", format!("{header}3 3 1\n1 2\n").as_bytes());
    assert_contains(&error_of(&[missing_value], &options()), &["value.mtx:3:", "missing value"]);
    let bad_size = write(dir.path(), "size.mtx", format!("{header}3 x 1\n1 2 1\n").as_bytes());
    assert_contains(&error_of(&[bad_size], &options()), &["size.mtx:2:", "invalid Matrix Market size line"]);

    let array = write(dir.path(), "dense.mtx", b"%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n");
    assert_contains(&error_of(&[array], &options()), &["dense.mtx:1:", "'array' (dense) format is not supported"]);
    let complex = write(dir.path(), "c.mtx", b"%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n");
    assert_contains(&error_of(&[complex], &options()), &["c.mtx:1:", "complex-valued"]);
    let hermitian = write(dir.path(), "h.mtx", b"%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n");
    assert_contains(&error_of(&[hermitian], &options()), &["h.mtx:1:", "'hermitian' is not supported"]);

    let no_banner = write(dir.path(), "nobanner.mtx", b"3 3 1\n1 2\n");
    assert_contains(
        &error_of(std::slice::from_ref(&no_banner), &options()),
        &["nobanner.mtx:1:", "%%MatrixMarket header"],
    );
    let explicit = with_format(InputFormat::MatrixMarket);
    assert_contains(&error_of(&[no_banner], &explicit), &["nobanner.mtx:1:", "not a Matrix Market file"]);
}

// ---------------------------------------------------------------- Graphalytics

#[test]
fn graphalytics_properties_with_weight_as_second_edge_property() {
    let parsed = parse_one(&fixture("tiny.properties"));
    // Vertices first (40 is isolated), then edges with the weight from column 4.
    assert_eq!(parsed.vertices(), vec![10, 20, 30, 40]);
    assert_eq!(parsed.edges(), vec![(10, 20, Some(0.5)), (20, 30, Some(1.5)), (30, 10, Some(2.5))]);
    assert!(
        matches!(parsed.records[0], InputRecord::Vertex(_)) && matches!(parsed.records[4], InputRecord::Edge { .. })
    );
    assert_eq!(parsed.info.directed, Some(false));
    assert_eq!(parsed.info.weighted, Some(true));
    assert_eq!(
        parsed.info.format_description,
        "LDBC Graphalytics graph 'tiny': tiny.v + tiny.e, undirected, weights in column 4 \
         (detected from the .properties extension)"
    );
    assert_eq!(parsed.info.files, vec![fixture("tiny.v"), fixture("tiny.e")]);
}

#[test]
fn graphalytics_pair_as_two_inputs_or_edge_file_alone() {
    let both = parse(&[fixture("tiny.e"), fixture("tiny.v")], &options());
    assert_eq!(both.vertices(), vec![10, 20, 30, 40]);
    assert_eq!(both.edges().len(), 3);
    // The properties beside the files say "undirected" and where the weight is.
    assert_eq!(both.info.directed, Some(false));
    assert_eq!(both.edges()[0].2, Some(0.5));

    let edge_file_only = parse_one(&fixture("tiny.e"));
    assert_eq!(edge_file_only.vertices(), vec![10, 20, 30, 40], "the .v beside the .e is read");
    assert_eq!(edge_file_only.records.len(), 7);

    let dir = tempdir();
    let lonely = write(dir.path(), "lonely.e", b"1 2\n");
    let parsed = parse_one(&lonely);
    assert_eq!(parsed.pairs(), vec![(1, 2)]);
    assert_contains(&parsed.info.format_description, &["no lonely.v beside it"]);
}

#[test]
fn graphalytics_missing_vertex_file_named_by_properties() {
    let dir = tempdir();
    write(dir.path(), "g.e", b"1 2\n");
    let properties = write(
        dir.path(),
        "g.properties",
        b"graph.g.vertex-file = missing.v\ngraph.g.edge-file = g.e\ngraph.g.directed = true\n",
    );
    assert_contains(
        &error_of(&[properties], &options()),
        &["g.properties:1:", "vertex file 'missing.v' named by graph.g.vertex-file not found"],
    );
}

#[test]
fn graphalytics_bad_directed_value_and_unrelated_properties() {
    let dir = tempdir();
    write(dir.path(), "g.v", b"1\n2\n");
    write(dir.path(), "g.e", b"1 2\n");
    let properties = write(
        dir.path(),
        "g.properties",
        b"graph.g.vertex-file = g.v\ngraph.g.edge-file = g.e\n\ngraph.g.directed = maybe\n",
    );
    assert_contains(&error_of(&[properties], &options()), &["g.properties:4:", "must be true or false, not 'maybe'"]);
    let unrelated = write(dir.path(), "other.properties", b"some.key = 1\n");
    assert_contains(&error_of(&[unrelated], &options()), &["other.properties", "no 'graph.NAME.edge-file' entry"]);
}

/// Where the Graphalytics validation graphs are: the repository copy once merged, else the
/// shared original.
fn graphalytics_dir() -> PathBuf {
    let in_repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/graphalytics");
    if in_repo.is_dir() {
        return in_repo;
    }
    let shared = PathBuf::from("/work/shared/validation/graphalytics");
    assert!(shared.is_dir(), "Graphalytics validation data not found in {} or {}", in_repo.display(), shared.display());
    shared
}

fn property(text: &str, key_suffix: &str) -> Option<String> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .find(|(key, _)| key.trim().ends_with(key_suffix))
        .map(|(_, value)| value.trim().to_string())
}

#[test]
fn all_graphalytics_validation_graphs_parse_with_the_declared_counts() {
    let dir = graphalytics_dir();
    let mut graphs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("list graphalytics dir")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "properties"))
        .collect();
    graphs.sort();
    assert_eq!(graphs.len(), 14, "expected the 14 Graphalytics validation graphs in {}", dir.display());
    for properties in graphs {
        let text = std::fs::read_to_string(&properties).expect("read properties");
        let count = |key| -> usize {
            property(&text, key).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{key} in {properties:?}"))
        };
        let parsed = parse(std::slice::from_ref(&properties), &options());
        let vertices = parsed.vertices();
        let edges = parsed.edges();
        assert_eq!(vertices.len(), count(".meta.vertices"), "vertices of {properties:?}");
        assert_eq!(edges.len(), count(".meta.edges"), "edges of {properties:?}");
        let directed = property(&text, ".directed").expect("directed") == "true";
        assert_eq!(parsed.info.directed, Some(directed), "{properties:?}");
        let weighted = property(&text, ".edge-properties.names").is_some_and(|n| n.contains("weight"));
        assert_eq!(parsed.info.weighted, Some(weighted), "{properties:?}");
        assert!(edges.iter().all(|e| e.2.is_some() == weighted), "{properties:?}");
        let known: std::collections::HashSet<u64> = vertices.iter().copied().collect();
        assert_eq!(known.len(), vertices.len(), "duplicate vertex in {properties:?}");
        assert!(edges.iter().all(|(s, d, _)| known.contains(s) && known.contains(d)), "{properties:?}");
    }
}

// ---------------------------------------------------------------- binary

#[test]
fn binary_pairs_u32_and_u64() {
    let parsed32 = parse_one(&fixture("pairs.bin32"));
    assert_eq!(parsed32.pairs(), vec![(1, 2), (2, 3), (3, 4_000_000_000)]);
    assert_eq!(parsed32.info.format_description, "raw little-endian u32 id pairs (detected from the .bin32 extension)");
    let parsed64 = parse_one(&fixture("pairs.bin64"));
    assert_eq!(parsed64.pairs(), vec![(1, 2), (2, 3), (3, u64::MAX)]);

    // The same bytes read as the other width: a u64 file is a valid u32 file, not the reverse.
    let as_u32 = parse(&[fixture("pairs.bin64")], &with_format(InputFormat::Bin32));
    assert_eq!(as_u32.pairs().len(), 6);
}

#[test]
fn binary_file_with_a_torn_last_pair() {
    let dir = tempdir();
    let mut bytes = read_fixture("pairs.bin32");
    bytes.extend_from_slice(&[1, 2, 3]);
    let odd = write(dir.path(), "odd.bin32", &bytes);
    assert_contains(
        &error_of(&[odd], &options()),
        &["odd.bin32", "size 27 bytes is not a multiple of 8", "3 trailing bytes"],
    );
    // Compressed: only noticed at the end of the stream, with the same message.
    let odd_gz = write(dir.path(), "odd.bin32.gz", &gzip(&bytes));
    assert_contains(&error_of(&[odd_gz], &options()), &["odd.bin32.gz", "3 trailing bytes"]);
    let odd64 = write(dir.path(), "odd.bin64", &read_fixture("pairs.bin64")[..40]);
    assert_contains(&error_of(&[odd64], &options()), &["odd.bin64", "not a multiple of 16", "8 trailing bytes"]);
}

#[test]
fn binary_data_read_as_text_is_refused() {
    let dir = tempdir();
    let renamed = write(dir.path(), "pairs.txt", &read_fixture("pairs.bin32"));
    assert_contains(
        &error_of(std::slice::from_ref(&renamed), &options()),
        &["pairs.txt", "binary data", "--format bin32"],
    );
    let explicit = with_format(InputFormat::EdgeList);
    assert_contains(&error_of(&[renamed], &explicit), &["pairs.txt", "binary data (NUL bytes)", "bin64"]);
}

// ---------------------------------------------------------------- compression

#[test]
fn gzip_and_zstd_give_the_same_records_for_every_format() {
    let dir = tempdir();
    for name in ["snap.txt", "edges.csv", "graph.mtx", "pattern.mtx", "pairs.bin32", "pairs.bin64"] {
        let plain = parse_one(&fixture(name));
        let content = read_fixture(name);
        for (suffix, compressed, adjective) in
            [(".gz", gzip(&content), "gzip-compressed "), (".zst", zstd(&content), "zstd-compressed ")]
        {
            let path = write(dir.path(), &format!("{name}{suffix}"), &compressed);
            let parsed = parse_one(&path);
            assert_eq!(parsed.records, plain.records, "{name}{suffix}");
            assert_eq!(parsed.info.format_description, format!("{adjective}{}", plain.info.format_description));
            assert_eq!(parsed.info.total_bytes, compressed.len() as u64);
            assert_eq!(parsed.bytes_consumed, compressed.len() as u64, "{name}{suffix}");
        }
    }
}

#[test]
fn compression_is_detected_by_magic_bytes_not_names() {
    let dir = tempdir();
    let content = read_fixture("snap.txt");
    let gz_named_txt = write(dir.path(), "edges.txt", &gzip(&content));
    let zst_without_extension = write(dir.path(), "edges", &zstd(&content));
    let plain_named_gz = write(dir.path(), "plain.txt.gz", &content);
    for path in [gz_named_txt, zst_without_extension, plain_named_gz] {
        assert_eq!(parse_one(&path).pairs(), SNAP_EDGES, "{path:?}");
    }
    // A Graphalytics pair, compressed, found beside each other.
    write(dir.path(), "t.v.gz", &gzip(b"1\n2\n3\n"));
    let edges = write(dir.path(), "t.e.zst", &zstd(b"1 2\n"));
    let parsed = parse_one(&edges);
    assert_eq!(parsed.vertices(), vec![1, 2, 3]);
    assert_eq!(parsed.pairs(), vec![(1, 2)]);
}

#[test]
fn multi_member_gzip_is_read_whole() {
    let dir = tempdir();
    let mut bytes = gzip(b"1 2\n");
    bytes.extend(gzip(b"3 4\n"));
    let path = write(dir.path(), "two.txt.gz", &bytes);
    assert_eq!(parse_one(&path).pairs(), vec![(1, 2), (3, 4)]);
}

#[test]
fn truncated_compressed_streams_are_errors_naming_the_file() {
    let dir = tempdir();
    let mut content = Vec::new();
    for i in 0..20_000 {
        writeln!(content, "{i} {}", i + 1).expect("write");
    }
    let gz = gzip(&content);
    let truncated_gz = write(dir.path(), "cut.txt.gz", &gz[..gz.len() / 2]);
    assert_contains(
        &error_of(&[truncated_gz], &options()),
        &["cut.txt.gz", "compressed stream ends unexpectedly (truncated gzip file?)"],
    );
    let zst = zstd(&content);
    let truncated_zst = write(dir.path(), "cut.txt.zst", &zst[..zst.len() / 2]);
    assert_contains(
        &error_of(&[truncated_zst], &options()),
        &["cut.txt.zst", "compressed stream ends unexpectedly (truncated zstd file?)"],
    );
    // Only the 8-byte trailer missing: the data is all there but the stream is still cut.
    let no_trailer = write(dir.path(), "trailer.txt.gz", &gz[..gz.len() - 4]);
    assert_contains(&error_of(&[no_trailer], &options()), &["trailer.txt.gz", "truncated gzip file?"]);
    // Even skip-bad-lines does not hide a damaged file.
    let skip = ImportOptions { skip_bad_lines: true, ..options() };
    let truncated_gz = dir.path().join("cut.txt.gz");
    assert_contains(&error_of(&[truncated_gz], &skip), &["truncated gzip file?"]);
}

#[test]
fn corrupt_gzip_data_is_an_error() {
    let dir = tempdir();
    let mut gz = gzip(b"1 2\n3 4\n5 6\n");
    let middle = gz.len() / 2;
    gz[middle] ^= 0xff;
    gz[middle + 1] ^= 0xff;
    let path = write(dir.path(), "bad.gz", &gz);
    assert_contains(&error_of(&[path], &options()), &["bad.gz", "gzip"]);
}

// ---------------------------------------------------------------- bad lines

#[test]
fn invalid_ids_name_file_line_and_text() {
    let dir = tempdir();
    let cases: [(&str, &[u8], &str, &str); 4] = [
        ("word.txt", b"# header\n1 2\nabc 3\n", "3: invalid vertex id 'abc'", "abc 3"),
        ("neg.txt", b"1 -2\n", "1: invalid vertex id '-2'", "1 -2"),
        (
            "big.txt",
            b"1 2\n18446744073709551616 1\n",
            "2: invalid vertex id '18446744073709551616'",
            "18446744073709551616 1",
        ),
        ("one.txt", b"1 2\n7\n", "2: expected 'src dst' but the line has a single field", "7"),
    ];
    for (name, content, message, text) in cases {
        let path = write(dir.path(), name, content);
        let error = error_of(std::slice::from_ref(&path), &with_format(InputFormat::EdgeList));
        assert_eq!(
            error,
            format!(
                "{}:{message}{}: {text}",
                path.display(),
                if message.contains("id") {
                    " (expected an unsigned 64-bit integer; use --ids string for non-numeric ids)"
                } else {
                    ""
                }
            )
        );
    }
}

#[test]
fn weights_missing_unparseable_or_nan() {
    let dir = tempdir();
    let weighted = ImportOptions { weighted: Some(true), ..options() };
    let missing = write(dir.path(), "m.txt", b"1 2 0.5\n2 3\n");
    assert_contains(&error_of(std::slice::from_ref(&missing), &weighted), &["m.txt:2:", "missing weight", ": 2 3"]);
    // Unweighted, the same file is fine (the third column is ignored).
    assert_eq!(parse_one(&missing).pairs(), vec![(1, 2), (2, 3)]);

    let nan = write(dir.path(), "nan.txt", b"1 2 NaN\n");
    assert_contains(&error_of(&[nan], &weighted), &["nan.txt:1:", "invalid weight 'NaN'", "1 2 NaN"]);
    let word = write(dir.path(), "w.txt", b"1 2 heavy\n");
    assert_contains(&error_of(&[word], &weighted), &["w.txt:1:", "invalid weight 'heavy' (expected a number)"]);
    let negative = write(dir.path(), "neg.txt", b"1 2 -0.5\n2 3 1e-3\n3 4 inf\n");
    assert_eq!(
        parse(&[negative], &weighted).edges(),
        vec![(1, 2, Some(-0.5)), (2, 3, Some(0.001)), (3, 4, Some(f64::INFINITY))]
    );
    let graphalytics_nan = write(
        dir.path(),
        "x.properties",
        b"graph.x.vertex-file = x.v\ngraph.x.edge-file = x.e\ngraph.x.edge-properties.names = weight\n",
    );
    write(dir.path(), "x.v", b"1\n2\n");
    write(dir.path(), "x.e", b"1 2 nan\n");
    assert_contains(&error_of(&[graphalytics_nan], &options()), &["x.e:1:", "invalid weight 'nan'"]);
}

#[test]
fn skip_bad_lines_counts_and_keeps_examples() {
    let dir = tempdir();
    let mut content = b"1 2\nx 3\n2 3\n4\n".to_vec();
    for i in 0..20 {
        writeln!(content, "bad{i} 1").expect("write");
    }
    content.extend_from_slice(b"3 4\n");
    let path = write(dir.path(), "dirty.txt", &content);
    let opts = ImportOptions { skip_bad_lines: true, format: InputFormat::EdgeList, ..options() };
    let parsed = parse(std::slice::from_ref(&path), &opts);
    assert_eq!(parsed.pairs(), vec![(1, 2), (2, 3), (3, 4)]);
    let (count, examples) = parsed.skipped;
    assert_eq!(count, 22);
    assert_eq!(examples.len(), 10);
    assert!(examples[0].starts_with(&format!("{}:2: ", path.display())), "{examples:?}");
    assert!(examples[0].ends_with(": x 3"), "{examples:?}");
    assert!(examples[1].starts_with(&format!("{}:4: ", path.display())) && examples[1].ends_with(": 4"));

    // Without the option the first bad line fails the parse.
    let strict = ImportOptions { skip_bad_lines: false, ..opts };
    assert_contains(&error_of(&[path], &strict), &["dirty.txt:2:"]);
}

#[test]
fn skip_bad_lines_in_matrix_market_and_binary() {
    let dir = tempdir();
    let mtx = write(dir.path(), "s.mtx", b"%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 2\n9 9\n2 3\n");
    let opts = ImportOptions { skip_bad_lines: true, ..options() };
    let parsed = parse(&[mtx], &opts);
    assert_eq!(parsed.pairs(), vec![(1, 2), (2, 3)]);
    assert_eq!(parsed.skipped.0, 1);

    let mut bytes = read_fixture("pairs.bin32");
    bytes.push(9);
    let bin = write(dir.path(), "s.bin32", &bytes);
    let parsed = parse(&[bin], &opts);
    assert_eq!(parsed.pairs().len(), 3);
    assert_eq!(parsed.skipped.0, 1);
    assert_contains(&parsed.skipped.1[0], &["1 trailing bytes"]);
}

// ---------------------------------------------------------------- string ids

#[test]
fn string_ids_are_kept_as_strings() {
    let dir = tempdir();
    let path = write(dir.path(), "names.txt", b"# who follows whom\nalice bob\nbob carol 2.5\n42 alice\n");
    let opts = ImportOptions { ids: IdType::String, ..options() };
    let parsed = parse(&[path], &opts);
    let s = |x: &str| RawId::Str(x.to_string());
    assert_eq!(
        parsed.records,
        vec![
            InputRecord::Edge { src: s("alice"), dst: s("bob"), weight: None },
            InputRecord::Edge { src: s("bob"), dst: s("carol"), weight: None },
            InputRecord::Edge { src: s("42"), dst: s("alice"), weight: None },
        ]
    );
    // Matrix Market vertices and entries agree on the spelling of string ids.
    let mtx = parse(&[fixture("pattern.mtx")], &opts);
    assert_eq!(mtx.records[0], InputRecord::Vertex(s("1")));
    assert_eq!(mtx.records[4], InputRecord::Edge { src: s("1"), dst: s("2"), weight: None });
    // CSV with quoted names containing the delimiter.
    let dir = tempdir();
    let csv = write(dir.path(), "people.csv", b"from,to\n\"Smith, J.\",\"O\"\"Neil\"\n");
    assert_eq!(
        parse(&[csv], &opts).records,
        vec![InputRecord::Edge { src: s("Smith, J."), dst: s("O\"Neil"), weight: None }]
    );
}

// ---------------------------------------------------------------- detection, missing, empty

#[test]
fn auto_detection_says_what_it_chose_and_why() {
    let expectations = [
        ("snap.txt", "SNAP/TSV edge list (detected from content)"),
        ("edges.csv", "(detected from the .csv extension and a header row)"),
        ("graph.mtx", "Matrix Market coordinate real symmetric (detected from the %%MatrixMarket header)"),
        ("pattern.mtx", "Matrix Market coordinate pattern general (detected from the %%MatrixMarket header)"),
        ("tiny.properties", "LDBC Graphalytics graph 'tiny'"),
        ("tiny.e", "(detected from the .e extension)"),
        ("pairs.bin32", "raw little-endian u32 id pairs (detected from the .bin32 extension)"),
        ("pairs.bin64", "raw little-endian u64 id pairs (detected from the .bin64 extension)"),
    ];
    for (name, description) in expectations {
        let (_, info) = open_inputs(&[fixture(name)], &options()).expect("open");
        assert_contains(&info.format_description, &[description]);
    }
    // Content beats names: a Matrix Market file called .txt, a headed CSV called .dat.
    let dir = tempdir();
    let mtx = write(dir.path(), "matrix.txt", &read_fixture("graph.mtx"));
    assert_contains(&open_inputs(&[mtx], &options()).expect("open").1.format_description, &["Matrix Market"]);
    let csv = write(dir.path(), "export.dat", b"src,dst\n1,2\n");
    let parsed = parse_one(&csv);
    assert_eq!(parsed.pairs(), vec![(1, 2)]);
    assert_contains(&parsed.info.format_description, &["CSV", "a header row followed by data rows"]);
    // --format overrides detection and says so.
    let forced = parse(&[fixture("edges.csv")], &with_format(InputFormat::Csv));
    assert_contains(&forced.info.format_description, &["(as given by --format)"]);
}

#[test]
fn undetectable_format_is_an_error() {
    let dir = tempdir();
    let prose = write(dir.path(), "notes.txt", b"Dear reader,\nthis is not a graph.\n");
    assert_contains(
        &error_of(&[prose], &options()),
        &["notes.txt:1:", "cannot detect the input format", "--format", "Dear reader,"],
    );
    let graphalytics = write(dir.path(), "g.txt", b"1 2\n");
    assert_contains(
        &error_of(&[graphalytics], &with_format(InputFormat::Graphalytics)),
        &["g.txt", ".properties file or a .v/.e file"],
    );
}

#[test]
fn missing_file_is_named() {
    let dir = tempdir();
    let missing = dir.path().join("nope.txt");
    let message = error_of(&[fixture("snap.txt"), missing.clone()], &options());
    assert_eq!(message, format!("{}: input file not found", missing.display()));
}

#[test]
fn directories_and_pipes_are_refused() {
    let dir = tempdir();
    assert_contains(&error_of(&[dir.path().to_path_buf()], &options()), &["is a directory"]);
    let fifo = dir.path().join("pipe");
    let c_path = std::ffi::CString::new(fifo.to_str().expect("utf-8 path")).expect("path");
    // SAFETY: mkfifo reads a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo");
    assert_contains(&error_of(&[fifo], &options()), &["pipe: is not a regular file", "save the data to a file"]);
}

#[test]
fn empty_inputs_are_errors() {
    let dir = tempdir();
    let empty = write(dir.path(), "empty.txt", b"");
    let comments = write(dir.path(), "comments.txt", b"# nothing\n\n% here\n");
    for path in [empty, comments] {
        assert_eq!(
            error_of(std::slice::from_ref(&path), &options()),
            format!("{}: input is empty: no edges or vertices found", path.display())
        );
    }
    let empty_matrix = write(dir.path(), "e.mtx", b"%%MatrixMarket matrix coordinate pattern general\n0 0 0\n");
    assert_contains(&error_of(&[empty_matrix], &options()), &["e.mtx: input is empty"]);
    let header_only = write(dir.path(), "h.csv", b"src,dst\n");
    assert_contains(&error_of(&[header_only], &options()), &["h.csv: input is empty"]);
    let all_bad = write(dir.path(), "bad.txt", b"x y\n");
    let skip = ImportOptions { skip_bad_lines: true, format: InputFormat::EdgeList, ..options() };
    assert_contains(&error_of(&[all_bad], &skip), &["bad.txt: input is empty"]);
}

#[test]
fn inputs_that_disagree_on_direction() {
    let both = [fixture("graph.mtx"), fixture("pattern.mtx")];
    assert_contains(&error_of(&both, &options()), &["disagree on direction", "--undirected"]);
    let decided = ImportOptions { undirected: Some(true), ..options() };
    let parsed = parse(&both, &decided);
    assert_eq!(parsed.info.directed, None);
    assert_eq!(parsed.edges().len(), 7);
}

// ---------------------------------------------------------------- speed

/// Parse speed on a generated SNAP file; run with
/// `cargo test --release -p outcore --test parse_inputs -- --ignored --nocapture parse_speed`.
/// `PARSE_BENCH_EDGES` sets the size; `PARSE_BENCH_GZIP=1` measures the gzip-compressed file.
#[test]
#[ignore = "benchmark: run explicitly in release mode"]
fn parse_speed_snap_text() {
    let dir = tempdir();
    let edges: u64 = std::env::var("PARSE_BENCH_EDGES").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000_000);
    let path = dir.path().join("bench.txt");
    {
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        writeln!(out, "# generated benchmark graph").expect("write");
        for _ in 0..edges {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            writeln!(out, "{}\t{}", state % 100_000_000, (state >> 32) % 100_000_000).expect("write");
        }
    }
    let path = if std::env::var("PARSE_BENCH_GZIP").is_ok_and(|v| v == "1") {
        let compressed = dir.path().join("bench.txt.gz");
        let mut encoder = flate2::write::GzEncoder::new(
            std::io::BufWriter::new(std::fs::File::create(&compressed).expect("create")),
            flate2::Compression::fast(),
        );
        std::io::copy(&mut std::fs::File::open(&path).expect("open"), &mut encoder).expect("gzip");
        encoder.finish().expect("gzip").flush().expect("flush");
        compressed
    } else {
        path
    };
    let size = std::fs::metadata(&path).expect("size").len();
    for round in 0..3 {
        let start = std::time::Instant::now();
        let cpu_start = thread_cpu_seconds();
        let (mut source, _) = open_inputs(std::slice::from_ref(&path), &options()).expect("open");
        let mut batch = Vec::with_capacity(1 << 16);
        let mut count = 0u64;
        let mut checksum = 0u64;
        loop {
            batch.clear();
            let more = source.read_batch(&mut batch, 1 << 16).expect("read");
            for record in &batch {
                if let InputRecord::Edge { src: RawId::U64(s), dst: RawId::U64(d), .. } = record {
                    checksum = checksum.wrapping_add(s ^ d);
                }
            }
            count += batch.len() as u64;
            if !more {
                break;
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        let cpu_seconds = thread_cpu_seconds() - cpu_start;
        assert_eq!(count, edges);
        println!(
            "round {round}: {edges} edges, {:.0} MB; wall {seconds:.2} s = {:.1} M edges/s; \
             thread CPU {cpu_seconds:.2} s = {:.1} M edges/s, {:.0} MB/s (checksum {checksum})",
            size as f64 / 1e6,
            edges as f64 / seconds / 1e6,
            edges as f64 / cpu_seconds / 1e6,
            size as f64 / cpu_seconds / 1e6
        );
    }
}

/// CPU time of this thread: the machine is shared, so wall time alone says little.
fn thread_cpu_seconds() -> f64 {
    let mut time = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time) };
    assert_eq!(rc, 0, "clock_gettime failed");
    time.tv_sec as f64 + time.tv_nsec as f64 / 1e9
}

// ---------------------------------------------------------------- parallel parsing

/// Reads all records in full-size batches (blocks of many chunks) inside a pool of `threads`.
fn parse_in_pool(inputs: &[PathBuf], opts: &ImportOptions, threads: usize) -> outcore::Result<Parsed> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("thread pool");
    pool.install(|| {
        let (mut source, info) = open_inputs(inputs, opts)?;
        let mut records = Vec::new();
        while source.read_batch(&mut records, 65_536)? {}
        Ok(Parsed { records, info, skipped: source.skipped_lines(), bytes_consumed: source.bytes_consumed() })
    })
}

/// A 1.5 MB edge list (many parallel chunks per block) with comments, blank lines, CRLF and
/// padded lines, weights and extra columns, and the edges it holds, in order.
fn mixed_edge_list(lines: usize) -> (Vec<u8>, Vec<(u64, u64)>) {
    let (mut text, mut edges) = (Vec::new(), Vec::new());
    for i in 0..lines as u64 {
        let (src, dst) = (i.wrapping_mul(2_654_435_761) % 1_000_003, (i * 7919) % 999_983);
        match i % 10 {
            0 => text.extend_from_slice(format!("# comment {i}\n").as_bytes()),
            1 => text.extend_from_slice(b"\n"),
            2 => text.extend_from_slice(format!("{src}\t{dst}\r\n").as_bytes()),
            3 => text.extend_from_slice(format!("  {src} , {dst} 1.5 extra\n").as_bytes()),
            4 => text.extend_from_slice(format!("% {src} {dst}\r\n").as_bytes()),
            _ => text.extend_from_slice(format!("{src} {dst}\n").as_bytes()),
        }
        if !matches!(i % 10, 0 | 1 | 4) {
            edges.push((src, dst));
        }
    }
    (text, edges)
}

#[test]
fn parallel_chunks_give_the_records_and_line_numbers_of_a_single_thread() {
    let dir = tempdir();
    let (content, expected) = mixed_edge_list(100_000);
    assert!(content.len() > 1 << 20, "the input must span several blocks of several chunks");
    let inputs = [
        write(dir.path(), "edges.txt", &content),
        write(dir.path(), "edges.txt.gz", &gzip(&content)),
        write(dir.path(), "edges.txt.zst", &zstd(&content)),
    ];
    for input in &inputs {
        let one = std::slice::from_ref(input);
        let parallel = parse_in_pool(one, &options(), 4).expect("parallel parse");
        let serial = parse_in_pool(one, &options(), 1).expect("serial parse");
        assert_eq!(parallel.pairs(), expected, "{input:?}");
        assert_eq!(serial.pairs(), expected, "{input:?}");
        assert_eq!(parse(one, &options()).pairs(), expected, "{input:?} in tiny batches");
        assert_eq!(parallel.bytes_consumed, serial.bytes_consumed);
    }

    // Bad lines far from the start, in different chunks: exact numbers, in input order.
    let mut damaged = content.clone();
    let mut line_starts: Vec<usize> = vec![0];
    line_starts.extend(damaged.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(i, _)| i + 1));
    for line in [77_777usize, 31_415] {
        damaged.splice(line_starts[line - 1]..line_starts[line - 1], b"x y\n".iter().copied());
    }
    let bad = write(dir.path(), "bad.txt", &damaged);
    let bad_zst = write(dir.path(), "bad.txt.zst", &zstd(&damaged));
    for (input, name) in [(&bad, "bad.txt"), (&bad_zst, "bad.txt.zst")] {
        let one = std::slice::from_ref(input);
        let message = parse_in_pool(one, &options(), 4).err().expect("bad line must fail").to_string();
        assert_contains(&message, &[&format!("{name}:31415:"), "invalid vertex id 'x'"]);
        let skip = ImportOptions { skip_bad_lines: true, ..options() };
        let parallel = parse_in_pool(one, &skip, 4).expect("skipping parse");
        let serial = parse_in_pool(one, &skip, 1).expect("skipping parse");
        assert_eq!(parallel.skipped.0, 2);
        assert_eq!(parallel.skipped, serial.skipped);
        assert!(parallel.skipped.1[0].contains(&format!("{name}:31415:")), "{:?}", parallel.skipped.1);
        // The second insertion shifted the first one down by one line.
        assert!(parallel.skipped.1[1].contains(&format!("{name}:77778:")), "{:?}", parallel.skipped.1);
        assert_eq!(parallel.pairs(), expected);
    }
}

// ---------------------------------------------------------------- parquet

/// Parquet edge tables written with the parquet crate's column writers (the writer the
/// library's result output uses), read back through detection and the Parquet reader.
#[cfg(feature = "parquet")]
mod parquet_tables {
    use std::sync::Arc;

    use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, FloatType, Int32Type, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;

    use super::*;

    /// One column of a test table: values and, for an optional column, definition levels.
    enum Col {
        I64(Vec<i64>),
        I32(Vec<i32>),
        F64(Vec<f64>),
        F32(Vec<f32>),
        Text(Vec<&'static str>),
        /// Optional INT64: `None` is a null.
        NullableI64(Vec<Option<i64>>),
    }

    /// Writes `schema` with `columns` in row groups of `group_rows` rows.
    fn write_table(path: &Path, schema: &str, columns: &[Col], group_rows: usize) {
        let schema = Arc::new(parse_message_type(schema).expect("schema"));
        let props = Arc::new(WriterProperties::builder().set_compression(parquet::basic::Compression::SNAPPY).build());
        let mut writer = SerializedFileWriter::new(std::fs::File::create(path).unwrap(), schema, props).unwrap();
        let rows = match &columns[0] {
            Col::I64(v) => v.len(),
            Col::I32(v) => v.len(),
            Col::Text(v) => v.len(),
            _ => panic!("first column of a test table: ids"),
        };
        for start in (0..rows).step_by(group_rows) {
            let range = start..(start + group_rows).min(rows);
            let mut group = writer.next_row_group().unwrap();
            for col in columns {
                let mut column = group.next_column().unwrap().expect("schema has the column");
                let r = range.clone();
                match col {
                    Col::I64(v) => column.typed::<Int64Type>().write_batch(&v[r], None, None),
                    Col::I32(v) => column.typed::<Int32Type>().write_batch(&v[r], None, None),
                    Col::F64(v) => column.typed::<DoubleType>().write_batch(&v[r], None, None),
                    Col::F32(v) => column.typed::<FloatType>().write_batch(&v[r], None, None),
                    Col::Text(v) => {
                        let bytes: Vec<ByteArray> = v[r].iter().map(|s| ByteArray::from(*s)).collect();
                        column.typed::<ByteArrayType>().write_batch(&bytes, None, None)
                    }
                    Col::NullableI64(v) => {
                        let levels: Vec<i16> = v[r.clone()].iter().map(|x| x.is_some() as i16).collect();
                        let values: Vec<i64> = v[r].iter().flatten().copied().collect();
                        column.typed::<Int64Type>().write_batch(&values, Some(&levels), None)
                    }
                }
                .unwrap();
                column.close().unwrap();
            }
            group.close().unwrap();
        }
        writer.close().unwrap();
    }

    /// 1000 edges, a few per row group, u64 ids (UINT_64, the top bit set for one) and weights.
    fn sample(dir: &Path, name: &str) -> (PathBuf, Vec<(u64, u64, Option<f64>)>) {
        let edges: Vec<(u64, u64, f64)> =
            (0..1000u64).map(|i| ((i * 7919) % 1009, (i * 104_729 + 3) % 997, (i % 13) as f64 * 0.5)).collect();
        let mut src: Vec<i64> = edges.iter().map(|e| e.0 as i64).collect();
        src[5] = u64::MAX as i64; // the largest u64 id, stored in INT64's bits
        let path = dir.join(name);
        write_table(
            &path,
            "message edges { required int64 from (INTEGER(64,false)); required int64 to (INTEGER(64,false)); \
             required double weight; required binary note (STRING); }",
            &[
                Col::I64(src),
                Col::I64(edges.iter().map(|e| e.1 as i64).collect()),
                Col::F64(edges.iter().map(|e| e.2).collect()),
                Col::Text(vec!["x"; 1000]),
            ],
            128,
        );
        let mut expected: Vec<_> = edges.iter().map(|&(s, d, w)| (s, d, Some(w))).collect();
        expected[5].0 = u64::MAX;
        (path, expected)
    }

    #[test]
    fn parquet_edges_stream_in_row_groups_with_weights() {
        let dir = tempdir();
        let (path, expected) = sample(dir.path(), "edges.parquet");
        let parsed = parse_one(&path);
        assert_eq!(parsed.edges(), expected);
        assert_eq!(parsed.info.weighted, Some(true));
        assert_contains(
            &parsed.info.format_description,
            &["Parquet", "source 'from'", "target 'to'", "weight 'weight'", "1000 rows in 8 row groups", ".parquet"],
        );
        // Progress counts the row groups' compressed bytes: some, and no more than the file.
        assert!(parsed.bytes_consumed > 0 && parsed.bytes_consumed <= std::fs::metadata(&path).unwrap().len());
        // Unweighted on request; columns by name or index; detection from the magic bytes.
        let unweighted = parse(std::slice::from_ref(&path), &ImportOptions { weighted: Some(false), ..options() });
        assert!(unweighted.edges().iter().all(|e| e.2.is_none()));
        let renamed =
            std::fs::copy(&path, dir.path().join("edges.data")).map(|_| dir.path().join("edges.data")).unwrap();
        let by_index = ImportOptions { src_col: Some("1".into()), dst_col: Some("FROM".into()), ..options() };
        let swapped = parse(&[renamed], &by_index);
        assert_contains(&swapped.info.format_description, &["PAR1"]);
        let flipped: Vec<_> = expected.iter().map(|&(s, d, w)| (d, s, w)).collect();
        assert_eq!(swapped.edges(), flipped);
    }

    #[test]
    fn parquet_string_and_int32_ids() {
        let dir = tempdir();
        let path = dir.path().join("names.parquet");
        write_table(
            &path,
            "message e { required binary a (STRING); required int32 b; required float w; }",
            &[Col::Text(vec!["alice", "bob", "carol"]), Col::I32(vec![7, 8, 9]), Col::F32(vec![0.5, 1.5, 2.0])],
            2,
        );
        // Weights asked for: the third column, as in CSV (it is not named `weight`).
        let strings = ImportOptions { ids: IdType::String, weighted: Some(true), ..options() };
        let parsed = parse(std::slice::from_ref(&path), &strings);
        let got: Vec<_> = parsed
            .records
            .iter()
            .map(|r| match r {
                InputRecord::Edge { src: RawId::Str(s), dst: RawId::Str(d), weight } => (s.clone(), d.clone(), *weight),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            got,
            [
                ("alice".into(), "7".into(), Some(0.5)),
                ("bob".into(), "8".into(), Some(1.5)),
                ("carol".into(), "9".into(), Some(2.0))
            ]
        );
        // String ids in u64 mode are refused up front, naming the column and the fix.
        assert_contains(
            &error_of(&[path], &options()),
            &["names.parquet", "column 'a'", "holds strings", "--ids string"],
        );
    }

    #[test]
    fn parquet_bad_columns_and_values_name_the_file_and_column() {
        let dir = tempdir();
        let (path, _) = sample(dir.path(), "edges.parquet");
        let missing = ImportOptions { dst_col: Some("target".into()), ..options() };
        assert_contains(
            &error_of(std::slice::from_ref(&path), &missing),
            &["edges.parquet", "--dst-col 'target'", "'from', 'to'"],
        );
        let float_ids = ImportOptions { dst_col: Some("weight".into()), ..options() };
        assert_contains(
            &error_of(std::slice::from_ref(&path), &float_ids),
            &["edges.parquet", "column 'weight'", "floating-point"],
        );
        let text_weight = ImportOptions { weight_col: Some("note".into()), ..options() };
        assert_contains(&error_of(&[path], &text_weight), &["column 'note'", "weights", "must be numbers"]);

        let bad = dir.path().join("bad.parquet");
        write_table(
            &bad,
            "message e { required int32 s; optional int64 d; }",
            &[Col::I32(vec![1, -4, 3, 5]), Col::NullableI64(vec![Some(2), Some(3), None, Some(6)])],
            3,
        );
        assert_contains(
            &error_of(std::slice::from_ref(&bad), &options()),
            &["bad.parquet", "row 2", "column 's'", "negative id -4"],
        );
        let skip = ImportOptions { skip_bad_lines: true, ..options() };
        let parsed = parse(&[bad], &skip);
        assert_eq!(parsed.pairs(), [(1, 2), (5, 6)]);
        assert_eq!(parsed.skipped.0, 2);
        assert!(parsed.skipped.1[1].contains("row 3: column 'd' is null"), "{:?}", parsed.skipped.1);

        let fake = write(dir.path(), "fake.parquet", b"1 2\n2 3\n");
        assert_contains(&error_of(&[fake], &options()), &["fake.parquet", "not a readable Parquet file"]);
    }
}
