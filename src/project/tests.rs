//! The tree's reading, dormant files and the analysis a revert of a plan shares.

use super::*;

const EXTS: [&str; 2] = ["py", "ts"];

#[test]
fn limits_refuse_a_large_tree_with_advice() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..30 {
        std::fs::write(dir.path().join(format!("m{i}.py")), "x = 1\n").unwrap();
    }
    let small = Limits {
        max_entries: 10,
        ..Limits::DEFAULT
    };
    let err = Project::load_with(dir.path(), &Options::default(), small, &EXTS).unwrap_err();
    assert!(
        err.to_string().contains("more than 10 files and folders"),
        "{err}"
    );
    let few_bytes = Limits {
        max_bytes: 20,
        ..Limits::DEFAULT
    };
    let err = Project::load_with(dir.path(), &Options::default(), few_bytes, &EXTS).unwrap_err();
    assert!(err.to_string().contains("ACP_PATCH_MAX_BYTES"), "{err}");
    let p = Project::load_with(dir.path(), &Options::default(), Limits::DEFAULT, &EXTS).unwrap();
    assert_eq!(p.files.len(), 30);
}

/// A plan over `p` editing `rel` at `offset` (inserting `text`, replacing `replaces`).
fn edit(p: &Project, rel: &str, offset: usize, replaces: usize, text: &str) -> crate::plan::Plan {
    let file = p.files.iter().find(|f| f.rel == rel).unwrap().clone();
    crate::plan::Plan {
        files: vec![crate::plan::FilePlan {
            file,
            edits: vec![crate::plan::Edit {
                offset,
                replaces,
                text: text.into(),
                piece: "test".into(),
            }],
            delete: false,
        }],
        ..Default::default()
    }
}

#[test]
fn a_text_no_language_keeps_is_listed_and_read_again_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("pkg")).unwrap();
    std::fs::write(dir.path().join("pkg/__init__.py"), "").unwrap();
    std::fs::write(dir.path().join("pkg/agent.py"), "import acp\n").unwrap();
    std::fs::write(dir.path().join("pkg/engine.py"), "class Engine: ...\n").unwrap();
    std::fs::write(dir.path().join("b.ts"), "let y = 2;\n").unwrap();
    let keep_for = |_: &Project| -> Box<Keep> {
        Box::new(|path: &Path, text: &str| path.ends_with("b.ts") || text.contains("acp"))
    };
    let p = Project::load_keeping(dir.path(), &Options::default(), &EXTS, &keep_for).unwrap();
    let kept: Vec<&str> = p.files.iter().map(|f| f.rel.as_str()).collect();
    let dormant: Vec<&str> = p.dormant.iter().map(|d| d.rel.as_str()).collect();
    assert_eq!(kept, ["b.ts", "pkg/agent.py"]);
    assert_eq!(dormant, ["pkg/__init__.py", "pkg/engine.py"]);
    // every file is still known by its path, and a dormant one is read when asked for
    let mut rels: Vec<&str> = p.rels().collect();
    rels.sort();
    assert_eq!(
        rels,
        ["b.ts", "pkg/__init__.py", "pkg/agent.py", "pkg/engine.py"]
    );
    assert_eq!(
        &*p.source("pkg/engine.py").unwrap().text,
        "class Engine: ...\n"
    );
    assert_eq!(&*p.source("pkg/agent.py").unwrap().text, "import acp\n");
    assert!(p.source("pkg/missing.py").is_none());
    let woken: Vec<String> = p.dormant_sources(&["py"]).map(|f| f.rel).collect();
    assert_eq!(woken, ["pkg/__init__.py", "pkg/engine.py"]);
    // read only where the path is admitted, decoded only where the bytes are
    let read = std::cell::RefCell::new(Vec::new());
    let woken: Vec<String> = p
        .dormant_sources_where(
            &["py"],
            |rel| rel.starts_with("pkg/"),
            |rel, bytes| {
                read.borrow_mut().push(rel.to_string());
                bytes.starts_with(b"class")
            },
        )
        .map(|f| f.rel)
        .collect();
    assert_eq!(woken, ["pkg/engine.py"]);
    assert_eq!(*read.borrow(), ["pkg/__init__.py", "pkg/engine.py"]);
    let none: Vec<String> = p
        .dormant_sources_where(&["py"], |rel| rel.ends_with("__init__.py"), |_, _| true)
        .map(|f| f.rel)
        .collect();
    assert_eq!(none, ["pkg/__init__.py"]);
    // a plan that writes a dormant file makes its text the tree's
    let file = p.source("pkg/engine.py").unwrap();
    let plan = crate::plan::Plan {
        files: vec![crate::plan::FilePlan {
            file,
            edits: vec![crate::plan::Edit {
                offset: 0,
                replaces: 0,
                text: "import acp_progress\n".into(),
                piece: "test".into(),
            }],
            delete: false,
        }],
        ..Default::default()
    };
    let after = p.after(&plan, &["py"]);
    let kept: Vec<&str> = after.files.iter().map(|f| f.rel.as_str()).collect();
    let dormant: Vec<&str> = after.dormant.iter().map(|d| d.rel.as_str()).collect();
    assert_eq!(kept, ["pkg/agent.py", "pkg/engine.py"]);
    assert_eq!(dormant, ["pkg/__init__.py"]);
    assert_eq!(
        &*after.source("pkg/engine.py").unwrap().text,
        "import acp_progress\nclass Engine: ...\n"
    );
    // a language that holds no agent gives up its texts, in the walk's order
    let mut p = p;
    p.make_dormant(&["ts"]);
    let kept: Vec<&str> = p.files.iter().map(|f| f.rel.as_str()).collect();
    let dormant: Vec<&str> = p.dormant.iter().map(|d| d.rel.as_str()).collect();
    assert_eq!(kept, ["pkg/agent.py"]);
    assert_eq!(dormant, ["b.ts", "pkg/__init__.py", "pkg/engine.py"]);
}

#[test]
fn a_plan_that_undoes_the_one_before_gives_back_that_tree_and_its_analysis() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
    std::fs::write(dir.path().join("b.ts"), "let y = 2;\n").unwrap();
    let p = Project::load_with(dir.path(), &Options::default(), Limits::DEFAULT, &EXTS).unwrap();
    let made = p.derived.get_or_try("test", || Ok::<_, ()>(1)).unwrap();
    let planned = p.after(&edit(&p, "a.py", 0, 0, "import z\n"), &["py"]);
    assert_eq!(
        *planned
            .derived
            .get_or_try("test", || Ok::<_, ()>(2))
            .unwrap(),
        2
    );
    let reverted = planned.after(&edit(&planned, "a.py", 0, 9, ""), &["py"]);
    let again = reverted
        .derived
        .get_or_try("test", || Ok::<_, ()>(3))
        .unwrap();
    assert!(
        Arc::ptr_eq(&made, &again),
        "the reverted tree is the first one"
    );
    // a revert that leaves another text is another tree
    let other = planned.after(&edit(&planned, "a.py", 0, 8, ""), &["py"]);
    assert_eq!(
        *other.derived.get_or_try("test", || Ok::<_, ()>(4)).unwrap(),
        4
    );
    // as is the same undo read for other endings
    let wider = planned.after(&edit(&planned, "a.py", 0, 9, ""), &["py", "ts"]);
    assert_eq!(
        *wider.derived.get_or_try("test", || Ok::<_, ()>(5)).unwrap(),
        5
    );
}

#[test]
fn leftover_names() {
    assert!(is_leftover(".acp-patch-tmp-123-abc"));
    assert!(is_leftover(".acp-patch-Ab12cd"));
    assert!(!is_leftover(".acp-patch-notes"));
    assert!(!is_leftover("acp-patch.toml"));
}
