use std::time::{Duration, Instant};

use serde_json::json;

use super::*;

fn values(text: &str) -> Result<Vec<Value>, InputError> {
    documents(text)?
        .into_iter()
        .map(|document| match document.problem {
            Some(problem) => Err(problem),
            None => Ok(document.value),
        })
        .collect()
}

fn deep_flow(levels: usize) -> String {
    format!("a: {}1{}\n", "[".repeat(levels), "]".repeat(levels))
}

#[test]
fn reads_documents_as_json() {
    let docs = values("a: 1\nb: [x, {c: true}]\n---\n---\nd: 2.5\n").unwrap();
    assert_eq!(
        docs,
        [
            json!({"a": 1, "b": ["x", {"c": true}]}),
            Value::Null,
            json!({"d": 2.5})
        ]
    );
}

#[test]
fn a_byte_order_mark_is_ignored_also_in_multi_document_files() {
    let docs = values("\u{feff}a: 1\n---\nb: 2\n").unwrap();
    assert_eq!(docs, [json!({"a": 1}), json!({"b": 2})]);
    assert_eq!(single_document("\u{feff}a: 1\n").unwrap(), json!({"a": 1}));
}

#[test]
fn duplicate_keys_are_refused_at_the_second_occurrence() {
    let error = values("spec:\n  storage: 1\n  log: 2\n  storage: 3\n").unwrap_err();
    let message = error.to_string();
    assert!(message.contains("duplicate key \"storage\""), "{message}");
    assert!(message.starts_with("spec"), "{message}");
    assert_eq!(error.line(), Some(4), "{message}");
    // Read leniently, the document is still there (the last value kept).
    let docs = documents("kind: X\nspec: {a: 1, a: 2, b: .nan}\n").unwrap();
    assert_eq!(
        docs[0].value,
        json!({"kind": "X", "spec": {"a": 2, "b": null}})
    );
    assert!(docs[0].problem.is_some());
    // The same key in different mappings is fine.
    values("a: {x: 1}\nb: {x: 2}\n").unwrap();
}

#[test]
fn nan_and_infinity_are_refused_with_path_and_line() {
    for (text, line) in [
        ("spec:\n  processCounts:\n    storage: .nan\n", 3),
        ("spec: {storage: .inf}\n", 1),
        ("a:\n- 1\n- -.inf\n", 3),
    ] {
        let error = values(text).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("is not a finite number"), "{message}");
        assert_eq!(error.line(), Some(line), "{text}: {message}");
    }
    assert_eq!(
        single_document("a: \".nan\"\n").unwrap(),
        json!({"a": ".nan"})
    );
}

#[test]
fn deep_flow_nesting_is_refused_quickly_naming_the_limit() {
    let started = Instant::now();
    let error = values(&deep_flow(100_000)).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(
        error,
        InputError::TooDeep {
            line: 1,
            limit: MAX_NESTING_DEPTH
        }
    );
    assert!(error.to_string().contains("64 levels"), "{error}");
    // JSON too, and mappings.
    let json = format!("{}{}", "{\"a\": ".repeat(100_000), "}".repeat(100_000));
    assert!(matches!(values(&json), Err(InputError::TooDeep { .. })));
    // Just within the limit: the root mapping is one level.
    values(&deep_flow(MAX_NESTING_DEPTH - 1)).unwrap();
    assert!(matches!(
        values(&deep_flow(MAX_NESTING_DEPTH)),
        Err(InputError::TooDeep { .. })
    ));
}

#[test]
fn deep_block_nesting_is_refused() {
    let compact = format!("a: {}x\n", "- ".repeat(100_000));
    assert!(matches!(values(&compact), Err(InputError::TooDeep { .. })));
    let mut indented = String::new();
    for level in 0..100 {
        indented.push_str(&format!("{}k{level}:\n", " ".repeat(level)));
    }
    assert!(matches!(
        values(&indented),
        Err(InputError::TooDeep { line: 65, .. })
    ));
}

#[test]
fn brackets_inside_strings_comments_and_block_scalars_do_not_count() {
    let brackets = "[".repeat(200);
    let text = format!(
        "a: \"{brackets}\"\nb: '{brackets}'\nc: x{brackets}\n# {brackets}\nd: |\n  {brackets}\n  more\ne: >-\n\n  {brackets}\nf: [\"]]]\", '}}}}', {{g: \"[[[\"}}]\nh: plain\n  continued {brackets}\n"
    );
    let docs = values(&text).unwrap();
    assert_eq!(docs[0]["h"], json!(format!("plain continued {brackets}")));
    assert_eq!(docs[0]["f"][2]["g"], "[[[");
}

#[test]
fn quotes_cannot_hide_real_nesting_from_the_pre_scan() {
    // A quote in the middle of a plain scalar starts no string: the brackets after it
    // are real.
    let deep = "[".repeat(100);
    for text in [
        format!("a: it's\nb: {deep}\n"),
        format!("a: [x'y, {deep}\n"),
        format!("a: |\n  '\nb: {deep}\n"),
        format!("a: x\n  'y\nb: {deep}\n"),
    ] {
        assert!(
            matches!(prepare(&text), Err(InputError::TooDeep { .. })),
            "{text}"
        );
    }
}

#[test]
fn alias_bombs_are_refused() {
    // 2 000 values, repeated 1 000 times.
    let text = format!(
        "a: &a [{}]\nb: [{}]\n",
        vec!["x"; 2000].join(", "),
        vec!["*a"; 1000].join(", ")
    );
    let error = values(&text).unwrap_err();
    assert!(error.to_string().contains("more than"), "{error}");
}

#[test]
fn size_is_bounded() {
    let big = "#".repeat(MAX_INPUT_BYTES + 1);
    let error = prepare(&big).unwrap_err();
    assert!(matches!(error, InputError::TooLarge { .. }));
    assert!(error.to_string().contains("4 MiB"), "{error}");

    let path = std::env::temp_dir().join(format!("yaml-input-{}.yaml", std::process::id()));
    std::fs::write(&path, &big).unwrap();
    let error = read_file(&path).unwrap_err();
    assert!(matches!(
        error,
        ReadError::Input {
            source: InputError::TooLarge { .. },
            ..
        }
    ));
    std::fs::write(&path, "a: 1\n").unwrap();
    assert_eq!(read_file(&path).unwrap(), "a: 1\n");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn line_of_finds_nodes_by_path() {
    let text = "kind: X\n---\nspec:\n  list:\n  - a\n  - {b: 7}\n  processCounts:\n    log: lots\n";
    let key = |k: &str| PathSegment::Key(k.to_owned());
    assert_eq!(
        line_of(text, 1, &[key("spec"), key("processCounts"), key("log")]),
        Some(8)
    );
    assert_eq!(
        line_of(
            text,
            1,
            &[key("spec"), key("list"), PathSegment::Index(1), key("b")]
        ),
        Some(6)
    );
    assert_eq!(line_of(text, 1, &[key("spec"), key("nope")]), None);
    assert_eq!(line_of(text, 5, &[key("spec")]), None);
}

/// Random texts made of YAML's troublesome pieces (a fixed seed: the same every run).
fn random_texts(seed: u64, tokens: &[&str], count: usize) -> impl Iterator<Item = String> {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(state >> 33).unwrap()
    };
    (0..count).map(move |_| {
        let len = next() % 30 + 1;
        (0..len).map(|_| tokens[next() % tokens.len()]).collect()
    })
}

const NOISE: &[&str] = &[
    "[", "]", "{", "}", ", ", ": ", "a", "'", "\"", " #", "\n", " ", "- ", "|\n", ">-\n", "\\",
    "x'y", "? ", "  ", "\n  ", "\n    ", "&x ", "*x", "!t ", "b:", ":", "#", "''", "\"[\"", "'}'",
    "|2\n", "\n- ", "c: |\n", "d: >\n  ",
];

fn depth_of(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth_of).max().unwrap_or(0),
        Value::Object(fields) => 1 + fields.values().map(depth_of).max().unwrap_or(0),
        _ => 0,
    }
}

#[test]
fn the_pre_scan_never_counts_fewer_flow_levels_than_the_parser_builds() {
    // Inside one flow sequence all nesting is flow nesting; `a: b` pairs inside a flow
    // sequence nest without brackets, so a value is at most twice as deep as brackets.
    let mut checked = 0;
    for noise in random_texts(12_345, NOISE, 60_000) {
        let text = format!("[{noise}]");
        let Ok(value) = serde_yaml_ng::from_str::<Value>(&text) else {
            continue;
        };
        let depth = depth_of(&value);
        checked += 1;
        assert!(
            prescan::excess_nesting_line(&text, (depth - 1) / 2).is_some(),
            "{depth} levels missed in {text:?}"
        );
    }
    assert!(checked > 1_000, "{checked}");
}

#[test]
fn no_block_noise_hides_a_flow_collection_from_the_pre_scan() {
    let mut checked = 0;
    for noise in random_texts(999, NOISE, 60_000) {
        let text = format!("k: {noise}\nz: [[[[[[[[[[1]]]]]]]]]]\n");
        let Ok(value) = serde_yaml_ng::from_str::<Value>(&text) else {
            continue;
        };
        if value.pointer("/z/0/0/0/0/0/0/0/0/0/0") != Some(&json!(1)) {
            continue;
        }
        checked += 1;
        assert!(
            prescan::excess_nesting_line(&text, 10).is_some(),
            "10 flow levels missed in {text:?}"
        );
    }
    assert!(checked > 1_000, "{checked}");
}
