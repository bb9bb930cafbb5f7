//! ARCHITECTURE.md §2: a module may `use` only the layers below it. This reads every source
//! file and fails on a reference that points up (or sideways) the stack.

use std::{collections::BTreeSet, fs, path::Path};

/// Top-level modules from the bottom of the stack to the top.
const LAYERS: &[&str] = &[
    "core",
    // The typed messages between processes: every layer above reads and writes through it.
    "protocol",
    "interfaces",
    "spine",
    "aem",
    "tools",
    // Perception sits above memory: a source captures what it sees through `emit()`.
    "memory",
    "msp",
    "jobs",
    "workspace",
    "llm",
    "cognition",
    "view",
    "launch",
    "cli",
];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| *l == module)
}

/// The crate modules `source` names through `crate::<module>`.
fn referenced(source: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in source.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.insert(name);
            }
            // `use crate::{a, b}` names several modules at once.
            if let Some(group) = after.strip_prefix('{') {
                for part in group.split(['}', ';']).next().unwrap_or("").split(',') {
                    let name: String = part
                        .trim()
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        found.insert(name);
                    }
                }
            }
            rest = after;
        }
    }
    found
}

/// Violations in one file belonging to `module`.
fn violations(module: &str, source: &str) -> Vec<String> {
    let Some(own) = rank(module) else {
        return vec![format!("module `{module}` is not in the layer list")];
    };
    referenced(source)
        .into_iter()
        .filter(|m| m != module)
        .filter_map(|m| match rank(&m) {
            Some(r) if r < own => None,
            Some(_) => Some(format!("`{module}` uses `{m}`, which is not below it")),
            // Crate-root items (e.g. the generated code's size_estimation) are not layers.
            None => None,
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn lower_layers_never_use_higher_ones() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .to_string();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "bin" {
            continue;
        }
        checked += 1;
        let text = fs::read_to_string(&file).unwrap();
        for v in violations(&module, &text) {
            problems.push(format!("{}: {v}", rel.display()));
        }
    }
    assert!(
        checked > 10,
        "only {checked} files checked; is the walk broken?"
    );
    assert!(
        problems.is_empty(),
        "layer violations:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_checker_catches_upward_and_grouped_uses() {
    assert!(violations("spine", "use crate::core::envelope::Envelope;").is_empty());
    assert_eq!(
        violations("core", "use crate::spine::control::ControlPlane;").len(),
        1
    );
    assert_eq!(
        violations("spine", "use crate::{core::x, cognition::engine};").len(),
        1
    );
    assert_eq!(violations("memory", "let x = crate::cli::run;").len(), 1);
    assert!(violations("memory", "// use crate::cli::run;").is_empty());
    assert_eq!(violations("nowhere", "").len(), 1);
}
