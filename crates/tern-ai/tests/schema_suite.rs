//! Cross-check of tern's schema engine with the `jsonschema` crate on the official
//! JSON-Schema-Test-Suite (draft 2020-12, the reference's default draft; vendored under
//! `tests/data/json-schema-test-suite/`).
//!
//! For every test of every group, tern's verdict ([`CompiledSchema::is_valid`]: the check
//! alone, no coercion) must equal the `jsonschema` crate's (formats asserted, as pi-schema
//! asserts them), except for the cases in [`DIFFERENCES`], each of which must really differ:
//! the list cannot go stale silently.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use tern_ai::schema::CompiledSchema;

/// Where the verdicts differ, and why: (file, group description, test description, reason).
/// A `*` group or test stands for all of the file's (or group's) cases that differ.
const DIFFERENCES: &[(&str, &str, &str, &str)] = &[
    // Remote schemas (the suite serves them from localhost:1234 or test.json-schema.org):
    // neither engine fetches anything. `jsonschema` (built without its HTTP and file
    // resolvers) refuses such schemas; tern, like pi-schema with `unresolvedRefs: "reject"`,
    // rejects the values that reach an unresolved `$ref`.
    ("refRemote.json", "*", "*", REMOTE),
    ("dynamicRef.json", "strict-tree schema, guards against misspelled properties", "*", REMOTE),
    ("dynamicRef.json", "tests for implementation dynamic anchor and reference link", "*", REMOTE),
    ("dynamicRef.json", "$ref and $dynamicAnchor are independent of order - $defs first", "*", REMOTE),
    ("dynamicRef.json", "$ref and $dynamicAnchor are independent of order - $ref first", "*", REMOTE),
    ("dynamicRef.json", "$ref to $dynamicRef finds detached $dynamicAnchor", "*", REMOTE),
    // The draft 2020-12 meta-schema: `jsonschema` has it built in, pi-schema (and so tern)
    // does not, so a `$ref` to it names nothing and rejects.
    ("ref.json", "remote ref, containing refs itself", "*", META_SCHEMA),
    ("defs.json", "validate definition against metaschema", "*", META_SCHEMA),
    // `$dynamicRef` resolves like `$ref`, to its initial target, without the dynamic scope
    // (a known difference from the reference too, see the `schema` module notes).
    ("dynamicRef.json", "A $dynamicRef resolves to the first $dynamicAnchor still in scope that is encountered when the schema is evaluated", "*", DYNAMIC_SCOPE),
    ("dynamicRef.json", "A $dynamicRef with intermediate scopes that don't include a matching $dynamicAnchor does not affect dynamic scope resolution", "*", DYNAMIC_SCOPE),
    ("dynamicRef.json", "A $dynamicRef that initially resolves to a schema with a matching $dynamicAnchor resolves to the first $dynamicAnchor in the dynamic scope", "*", DYNAMIC_SCOPE),
    ("dynamicRef.json", "multiple dynamic paths to the $dynamicRef keyword", "*", DYNAMIC_SCOPE),
    ("dynamicRef.json", "after leaving a dynamic scope, it is not used by a $dynamicRef", "*", DYNAMIC_SCOPE),
    ("unevaluatedItems.json", "unevaluatedItems with $dynamicRef", "*", DYNAMIC_SCOPE),
    ("unevaluatedProperties.json", "unevaluatedProperties with $dynamicRef", "*", DYNAMIC_SCOPE),
    // `idn-email` and `idn-hostname`: pi-schema (and tern) assert them; `jsonschema` without
    // its `idna` feature treats them as unknown formats, which pass.
    ("format.json", "idn-email format", "*", IDN_FORMATS),
    ("format.json", "idn-hostname format", "*", IDN_FORMATS),
];

const REMOTE: &str = "remote schemas are not fetched";
const META_SCHEMA: &str = "the meta-schema is not built in";
const DYNAMIC_SCOPE: &str = "$dynamicRef without the dynamic scope";
const IDN_FORMATS: &str = "idn formats asserted by tern only";

/// One case of the suite with both verdicts.
struct Case {
    file: String,
    group: String,
    test: String,
    tern: bool,
    /// None when `jsonschema` cannot build the schema.
    oracle: Option<bool>,
    suite: bool,
}

fn listed(case: &Case) -> Option<usize> {
    DIFFERENCES.iter().position(|(file, group, test, _)| {
        *file == case.file
            && (*group == "*" || *group == case.group)
            && (*test == "*" || *test == case.test)
    })
}

fn load_cases() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/json-schema-test-suite/draft2020-12");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("read the vendored test suite")
        .map(|e| e.expect("list the vendored test suite").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for path in files {
        let file = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a UTF-8 file name")
            .to_string();
        let text = std::fs::read_to_string(&path).expect("read a suite file");
        let groups: Vec<Value> = serde_json::from_str(&text).expect("parse a suite file");
        for group in &groups {
            let schema = &group["schema"];
            let tern = CompiledSchema::new(schema.clone());
            let oracle = jsonschema::draft202012::options()
                .should_validate_formats(true)
                .build(schema)
                .ok();
            for test in group["tests"].as_array().expect("a group's tests") {
                let data = &test["data"];
                cases.push(Case {
                    file: file.clone(),
                    group: group["description"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    test: test["description"].as_str().unwrap_or_default().to_string(),
                    tern: tern.is_valid(data),
                    oracle: oracle.as_ref().map(|v| v.is_valid(data)),
                    suite: test["valid"].as_bool().expect("a test's verdict"),
                });
            }
        }
    }
    cases
}

#[test]
fn agrees_with_the_jsonschema_crate_on_the_official_suite() {
    let cases = load_cases();
    assert!(
        cases.len() > 1000,
        "expected the whole suite, found {} cases",
        cases.len()
    );
    let mut unexpected = Vec::new();
    // Differing cases per entry of DIFFERENCES.
    let mut used: BTreeMap<usize, usize> = BTreeMap::new();
    let mut differing = 0;
    for case in &cases {
        let differs = case.oracle != Some(case.tern);
        match (differs, listed(case)) {
            (true, Some(i)) => {
                *used.entry(i).or_default() += 1;
                differing += 1;
            }
            (false, None) => {}
            (true, None) => unexpected.push(format!(
                "differs, not listed: {} | {} | {}: tern {}, jsonschema {:?}, suite {}",
                case.file, case.group, case.test, case.tern, case.oracle, case.suite
            )),
            (false, Some(i)) => {
                // A wildcard entry covers only the cases that differ; an exact one must differ.
                let (_, group, test, _) = DIFFERENCES[i];
                if group != "*" && test != "*" {
                    unexpected.push(format!(
                        "listed, but agrees: {} | {} | {}",
                        case.file, case.group, case.test
                    ));
                }
            }
        }
    }
    for (i, entry) in DIFFERENCES.iter().enumerate() {
        if !used.contains_key(&i) {
            unexpected.push(format!(
                "listed difference matches no differing case: {entry:?}"
            ));
        }
    }
    let mut by_reason: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, n) in &used {
        *by_reason.entry(DIFFERENCES[*i].3).or_default() += n;
    }
    for (reason, n) in &by_reason {
        println!("differ as listed ({reason}): {n}");
    }
    println!(
        "{} agree, {} differ as listed, {} unexpected",
        cases.len() - differing - unexpected.len(),
        differing,
        unexpected.len()
    );
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
}
