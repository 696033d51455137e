//! `web/lib/facts.js` is generated from `campfire::facts`: this test fails
//! when the checked-in file differs from what the Rust facts render, and
//! rewrites it when run with `CAMPFIRE_WRITE_FACTS=1`.

use std::path::PathBuf;

#[test]
fn web_lib_facts_js_is_generated_from_the_rust_facts() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../web/lib/facts.js");
    let expected = campfire::facts::module_text();
    if std::env::var_os("CAMPFIRE_WRITE_FACTS").is_some() {
        std::fs::write(&path, &expected).expect("write web/lib/facts.js");
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "{} is out of date: run CAMPFIRE_WRITE_FACTS=1 cargo test -p web-bindings --test facts_module",
        path.display()
    );
}

#[test]
fn every_fact_has_a_distinct_javascript_name() {
    let facts = campfire::facts::facts();
    let mut names: Vec<_> = facts.iter().map(|f| f.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), facts.len());
    let all: serde_json::Value = serde_json::from_str(&campfire::facts::facts_json()).unwrap();
    assert_eq!(all.as_object().map(|o| o.len()), Some(facts.len()));
    assert!(
        facts
            .iter()
            .all(|f| f.json != "null" && !f.doc.contains("*/"))
    );
}
