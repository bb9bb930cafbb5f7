//! ARCHITECTURE.md §2: a module may `use` only the layers below it. This reads every source
//! file and fails on a reference that points up (or sideways) the stack.

use std::{
    collections::BTreeSet,
    fs,
    path::{Path, PathBuf},
};

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
    // The benchmarks (`iron bench`): they measure every layer below through its API, and only
    // the command line above calls them.
    "bench",
    "cli",
];

/// The module above every library layer that only `cli` may use.
const BENCH: &str = "bench";

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

/// Every source file of a layer under `src/` (the crate root and `src/bin/` left out): its
/// layer, its path below `src/`, its text.
fn layer_sources() -> Vec<(String, PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut sources = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap().to_path_buf();
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
        let text = fs::read_to_string(&file).unwrap();
        sources.push((module, rel, text));
    }
    assert!(
        sources.len() > 10,
        "only {} files checked; is the walk broken?",
        sources.len()
    );
    sources
}

#[test]
fn lower_layers_never_use_higher_ones() {
    let mut problems = Vec::new();
    for (module, rel, text) in layer_sources() {
        for v in violations(&module, &text) {
            problems.push(format!("{}: {v}", rel.display()));
        }
    }
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
    assert_eq!(
        violations("launch", "use crate::bench::stats::Figures;").len(),
        1
    );
    assert!(violations("cli", "crate::bench::catalog::run(10)").is_empty());
}

#[test]
fn the_benches_sit_above_every_library_layer_and_below_the_command_line() {
    let (bench, cli) = (rank(BENCH).unwrap(), rank("cli").unwrap());
    assert_eq!(cli, LAYERS.len() - 1, "`cli` is the top of the stack");
    assert_eq!(bench, cli - 1, "nothing sits between `bench` and `cli`");
    for layer in &LAYERS[..bench] {
        let uses = format!("use crate::{layer}::Thing;");
        assert!(
            violations(BENCH, &uses).is_empty(),
            "`bench` may use `{layer}`"
        );
    }
}

#[test]
fn no_library_layer_uses_the_benches() {
    let problems: Vec<String> = layer_sources()
        .into_iter()
        .filter(|(module, _, _)| module != BENCH && module != "cli")
        .filter(|(_, _, text)| referenced(text).contains(BENCH))
        .map(|(module, rel, _)| format!("{}: `{module}` uses `{BENCH}`", rel.display()))
        .collect();
    assert!(
        problems.is_empty(),
        "only `cli` may use the benches:\n{}",
        problems.join("\n")
    );
}

/// The sibling modules of `siblings` that `source` (code of one of them, inside `folder`) names
/// through `super::x`, `super::{x, …}` or `crate::<folder>::x`. Tests are left out: a test may
/// reach anywhere.
fn sibling_uses(source: &str, folder: &str, siblings: &BTreeSet<String>) -> BTreeSet<String> {
    let code: String = source
        .split("#[cfg(test)]")
        .next()
        .unwrap_or("")
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for prefix in ["super::".to_string(), format!("crate::{folder}::")] {
        let mut rest = code.as_str();
        while let Some(i) = rest.find(&prefix) {
            let after = &rest[i + prefix.len()..];
            match after.strip_prefix('{') {
                Some(group) => {
                    let body = group.split('}').next().unwrap_or("");
                    found.extend(
                        body.split(',')
                            .map(|p| ident(p.split("::").next().unwrap())),
                    );
                }
                None => {
                    found.insert(ident(after));
                }
            }
            rest = after;
        }
    }
    found.retain(|name| siblings.contains(name));
    found
}

/// Whether the graph `uses` (module → modules it names) has a cycle; the first one found.
fn a_cycle(uses: &std::collections::BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        at: &str,
        uses: &std::collections::BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|p| p == at) {
            return Some(path[start..].to_vec());
        }
        if done.contains(at) {
            return None;
        }
        path.push(at.to_string());
        for next in uses.get(at).into_iter().flatten() {
            if let Some(cycle) = visit(next, uses, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(at.to_string());
        None
    }
    let mut done = BTreeSet::new();
    uses.keys()
        .find_map(|m| visit(m, uses, &mut Vec::new(), &mut done))
}

#[test]
fn the_modules_of_each_layer_import_one_another_without_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut cycles = Vec::new();
    for layer in LAYERS {
        let dir = src.join(layer);
        if !dir.is_dir() {
            continue;
        }
        // Each file or folder directly inside the layer is one module; a folder's text is all
        // of its files but its tests (`tests.rs`, `*_tests.rs`, and what follows a file's
        // `#[cfg(test)]`): a test may reach anywhere.
        let mut text: std::collections::BTreeMap<String, String> = Default::default();
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().to_string();
            if name == "mod" {
                continue;
            }
            let mut files = Vec::new();
            if path.is_dir() {
                walk(&path, &mut files);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
            let is_test = |f: &PathBuf| {
                let stem = f.file_stem().unwrap().to_string_lossy();
                stem == "tests" || stem.ends_with("_tests")
            };
            let body = files
                .iter()
                .filter(|f| !is_test(f))
                .map(|f| {
                    let text = fs::read_to_string(f).unwrap();
                    text.split("#[cfg(test)]").next().unwrap_or("").to_string()
                })
                .collect::<Vec<_>>()
                .join("\n");
            text.insert(name, body);
        }
        let siblings: BTreeSet<String> = text.keys().cloned().collect();
        let uses = text
            .iter()
            .map(|(m, t)| {
                let mut named = sibling_uses(t, layer, &siblings);
                named.remove(m);
                (m.clone(), named)
            })
            .collect();
        if let Some(cycle) = a_cycle(&uses) {
            cycles.push(format!("{layer}: {}", cycle.join(" -> ")));
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_cycle_check_sees_a_cycle_through_super_and_crate_paths() {
    let siblings: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
    let uses = [
        ("a", "use super::{b, x};"),
        ("b", "use crate::demo::c::Thing;"),
        (
            "c",
            "fn f() { super::a::g() }\n#[cfg(test)]\nmod tests { use super::b; }",
        ),
    ]
    .into_iter()
    .map(|(m, t)| (m.to_string(), sibling_uses(t, "demo", &siblings)))
    .collect();
    assert_eq!(a_cycle(&uses).unwrap(), ["a", "b", "c"]);
    let broken = [("a", "use super::b;"), ("b", "use super::c;"), ("c", "")]
        .into_iter()
        .map(|(m, t)| (m.to_string(), sibling_uses(t, "demo", &siblings)))
        .collect();
    assert_eq!(a_cycle(&broken), None);
}
