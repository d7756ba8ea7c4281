//! Every `.rs` file under a workspace crate's `src/` and `tests/` must be compiled. A file
//! nothing declares with `mod` is silently skipped by cargo, and its tests never run: that
//! happened to `webhook/src/decision_tests.rs` once. This check follows `mod` declarations
//! (with `#[path]`) from every crate root cargo builds and names every file left over.
//!
//! It reads source text line by line, not a syntax tree: a `mod x;` inside an inline
//! `mod y { ... }` block is resolved as if it were at the file's top level. That can only
//! report a reachable file as orphaned (a loud failure), never hide an orphan.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// One `mod name;` declaration: its name and its `#[path = "..."]`, if any.
#[derive(Debug, PartialEq, Eq)]
struct ModDecl {
    name: String,
    path: Option<String>,
}

/// The file-backed `mod` declarations of one source file (inline `mod x { }` blocks have
/// no file of their own and are skipped).
fn mod_decls(source: &str) -> Vec<ModDecl> {
    let mut decls = Vec::new();
    let mut pending_path: Option<String> = None;
    for line in source.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("#[path") {
            pending_path = rest.split('"').nth(1).map(str::to_string).or(pending_path);
            continue;
        }
        if line.starts_with("#[") {
            // Other attributes (cfg, allow, ...) may sit between #[path] and the mod line.
            continue;
        }
        let path = pending_path.take();
        let mut words = line.split_whitespace();
        let mut word = words.next();
        if word.is_some_and(|w| w == "pub" || w.starts_with("pub(")) {
            word = words.next();
        }
        if word != Some("mod") {
            continue;
        }
        let Some(rest) = words.next() else { continue };
        let Some(name) = rest.strip_suffix(';') else {
            // `mod x {` (inline) or `mod x` followed by `;` on another line: the latter is
            // not rustfmt's style, so the inline case is the only one left.
            continue;
        };
        decls.push(ModDecl {
            name: name.to_string(),
            path,
        });
    }
    decls
}

/// A file whose child modules live in its own directory: crate roots and `mod.rs`.
fn is_mod_rs(file: &Path, roots: &BTreeSet<PathBuf>) -> bool {
    roots.contains(file) || file.file_name().is_some_and(|n| n == "mod.rs")
}

/// The files a declaration in `file` may name, in the order rustc tries them.
fn candidates(file: &Path, decl: &ModDecl, roots: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
    let dir = file.parent().unwrap_or(Path::new("."));
    if let Some(path) = &decl.path {
        return vec![dir.join(path)];
    }
    let base = if is_mod_rs(file, roots) {
        dir.to_path_buf()
    } else {
        dir.join(file.file_stem().unwrap_or_default())
    };
    vec![
        base.join(format!("{}.rs", decl.name)),
        base.join(&decl.name).join("mod.rs"),
    ]
}

/// Crate roots cargo builds for a package: lib, main, bins, tests, benches, examples,
/// build script, and any `path = "..."` target in its Cargo.toml.
fn crate_roots(package: &Path) -> BTreeSet<PathBuf> {
    let mut roots = BTreeSet::new();
    for file in ["src/lib.rs", "src/main.rs", "build.rs"] {
        roots.insert(package.join(file));
    }
    for dir in ["src/bin", "tests", "benches", "examples"] {
        let Ok(entries) = fs::read_dir(package.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "rs") {
                roots.insert(path);
            } else if path.join("main.rs").is_file() {
                roots.insert(path.join("main.rs"));
            }
        }
    }
    let manifest = fs::read_to_string(package.join("Cargo.toml")).unwrap_or_default();
    for line in manifest.lines() {
        if let Some(rest) = line.trim().strip_prefix("path") {
            let rest = rest.trim_start();
            if let Some(value) = rest
                .strip_prefix('=')
                .and_then(|v| v.trim().split('"').nth(1))
                && value.ends_with(".rs")
            {
                roots.insert(package.join(value));
            }
        }
    }
    roots.into_iter().filter(|p| p.is_file()).collect()
}

/// Every file reachable from the roots through `mod` declarations.
fn reachable(roots: &BTreeSet<PathBuf>) -> BTreeSet<PathBuf> {
    let declared = declarations(roots).into_iter().map(|(_, file)| file);
    roots
        .iter()
        .cloned()
        .chain(declared)
        .filter_map(|f| f.canonicalize().ok())
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Files under the package's `src/` and `tests/` that no crate root reaches.
fn orphans(package: &Path) -> Vec<PathBuf> {
    let roots = crate_roots(package);
    let reached = reachable(&roots);
    let mut files = Vec::new();
    rust_files(&package.join("src"), &mut files);
    rust_files(&package.join("tests"), &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|f| f.canonicalize().is_ok_and(|c| !reached.contains(&c)))
        .collect()
}

/// The workspace's member packages, read from its Cargo.toml.
fn members(workspace: &Path) -> Vec<PathBuf> {
    let manifest = fs::read_to_string(workspace.join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("reading the workspace Cargo.toml: {e}"));
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .unwrap_or_else(|| panic!("the workspace Cargo.toml has no members line"));
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(|m| workspace.join(m))
        .collect()
}

#[test]
fn every_rust_file_under_src_and_tests_is_compiled() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or_else(|| panic!("the api crate sits in the workspace"));
    let packages = members(workspace);
    assert!(
        packages.len() >= 5,
        "expected every lifeguard crate, found {packages:?}"
    );
    let orphaned: Vec<String> = packages
        .iter()
        .flat_map(|p| orphans(p))
        .map(|f| {
            f.strip_prefix(workspace)
                .unwrap_or(&f)
                .display()
                .to_string()
        })
        .collect();
    assert!(
        orphaned.is_empty(),
        "these files are never compiled; declare each with `mod` (tests: `#[cfg(test)] mod x_tests;` in the file they test): {orphaned:?}"
    );
}

#[test]
fn mod_declarations_are_read_with_their_path_attribute() {
    let cases: Vec<(&str, &str, Vec<ModDecl>)> = vec![
        (
            "plain and pub",
            "pub mod cache;\nmod review;\npub(crate) mod x;\n",
            vec![decl("cache", None), decl("review", None), decl("x", None)],
        ),
        (
            "cfg(test) with path, attribute lines in between",
            "#[cfg(test)]\n#[path = \"drain_tests.rs\"]\n#[allow(dead_code)]\nmod tests;\n",
            vec![decl("tests", Some("drain_tests.rs"))],
        ),
        (
            "inline module and comments are not files",
            "// mod gone;\nmod tests {\n    use super::*;\n}\n/// mod doc;\n",
            vec![],
        ),
        (
            "a path attribute does not leak onto a later declaration",
            "#[path = \"a.rs\"]\nmod a;\nfn f() {}\nmod b;\n",
            vec![decl("a", Some("a.rs")), decl("b", None)],
        ),
    ];
    for (what, source, expected) in cases {
        assert_eq!(mod_decls(source), expected, "{what}");
    }
}

#[test]
fn declarations_resolve_like_rustc() {
    let roots = BTreeSet::from([PathBuf::from("w/src/lib.rs")]);
    let cases: Vec<(&str, &str, ModDecl, Vec<&str>)> = vec![
        (
            "from the crate root",
            "w/src/lib.rs",
            decl("decision", None),
            vec!["w/src/decision.rs", "w/src/decision/mod.rs"],
        ),
        (
            "from a non-mod-rs file",
            "w/src/cache.rs",
            decl("tests", None),
            vec!["w/src/cache/tests.rs", "w/src/cache/tests/mod.rs"],
        ),
        (
            "path attribute is relative to the file's directory",
            "w/src/decision.rs",
            decl("tests", Some("decision_tests.rs")),
            vec!["w/src/decision_tests.rs"],
        ),
        (
            "from a mod.rs",
            "w/src/a/mod.rs",
            decl("b", None),
            vec!["w/src/a/b.rs", "w/src/a/b/mod.rs"],
        ),
    ];
    for (what, file, decl, expected) in cases {
        let got = candidates(Path::new(file), &decl, &roots);
        let expected: Vec<PathBuf> = expected.into_iter().map(PathBuf::from).collect();
        assert_eq!(got, expected, "{what}");
    }
}

fn decl(name: &str, path: Option<&str>) -> ModDecl {
    ModDecl {
        name: name.into(),
        path: path.map(str::to_string),
    }
}

/// (declaring file, declared file) for every `mod` reachable from `roots`.
fn declarations(roots: &BTreeSet<PathBuf>) -> Vec<(PathBuf, PathBuf)> {
    let mut pairs = Vec::new();
    let mut seen = BTreeSet::new();
    let mut stack: Vec<PathBuf> = roots.iter().cloned().collect();
    while let Some(file) = stack.pop() {
        // Canonical: `a/../b.rs` and `b.rs` are one file, read once.
        let Ok(canonical) = file.canonicalize() else {
            continue;
        };
        if !seen.insert(canonical) {
            continue;
        }
        let source = fs::read_to_string(&file).unwrap_or_default();
        for decl in mod_decls(&source) {
            if let Some(found) = candidates(&file, &decl, roots)
                .into_iter()
                .find(|c| c.is_file())
            {
                pairs.push((file.clone(), found.clone()));
                stack.push(found);
            }
        }
    }
    pairs
}

/// Whether `tests` (an `x_tests.rs`) is declared by the code it tests: `x.rs` (or
/// `x_more_tests.rs` by `x.rs`) beside it, or the module whose directory it sits in.
fn declared_by_its_subject(declarer: &Path, tests: &Path) -> bool {
    let stem = |p: &Path| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let subject = stem(declarer);
    let beside = declarer.parent() == tests.parent()
        && !matches!(subject.as_str(), "lib" | "main" | "mod")
        && stem(tests).starts_with(&format!("{subject}_"));
    let inside = tests
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|dir| dir.to_string_lossy() == subject);
    beside || inside
}

#[test]
fn test_modules_are_declared_next_to_the_code_they_test() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or_else(|| panic!("the api crate sits in the workspace"));
    let test_modules: Vec<(PathBuf, PathBuf)> = members(workspace)
        .iter()
        .flat_map(|p| declarations(&crate_roots(p)))
        .filter(|(_, declared)| stem_ends_with_tests(declared))
        .collect();
    assert!(
        test_modules.len() >= 20,
        "found only {} test modules: is the walk broken?",
        test_modules.len()
    );
    let misplaced: Vec<String> = test_modules
        .into_iter()
        .filter(|(declarer, declared)| !declared_by_its_subject(declarer, declared))
        .map(|(declarer, declared)| {
            format!("{} declares {}", declarer.display(), declared.display())
        })
        .collect();
    assert!(
        misplaced.is_empty(),
        "declare each x_tests.rs in x.rs, next to the code it tests: {misplaced:?}"
    );
}

fn stem_ends_with_tests(file: &Path) -> bool {
    file.file_stem()
        .is_some_and(|s| s.to_string_lossy().ends_with("_tests"))
        && file.components().any(|c| c.as_os_str() == "src")
}

#[test]
fn a_test_module_belongs_to_the_file_beside_it_or_its_directory() {
    let cases = [
        ("w/src/plan.rs", "w/src/plan_tests.rs", true),
        ("w/src/plan.rs", "w/src/plan_create_tests.rs", true),
        ("w/src/lib.rs", "w/src/plan_tests.rs", false),
        ("w/src/reconcile.rs", "w/src/plan_tests.rs", false),
        (
            "w/src/podspec.rs",
            "w/src/podspec/avoid_node_tests.rs",
            true,
        ),
        ("w/src/other.rs", "w/src/podspec/avoid_node_tests.rs", false),
    ];
    for (declarer, tests, want) in cases {
        assert_eq!(
            declared_by_its_subject(Path::new(declarer), Path::new(tests)),
            want,
            "{declarer} -> {tests}"
        );
    }
}
