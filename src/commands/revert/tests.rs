use super::checks::find_marker;
use super::removal::{first_difference, occurrences, removal_plan};
use super::*;
use crate::lang::parts::Part;
use crate::source::SourceFile;

#[test]
fn the_agents_own_names_that_contain_the_marker_are_not_leftovers() {
    // fast-agent-mcp 0.10.48 has its own `acp_progress_manager`
    let own = "def acp_progress_manager(self):\n    my_acp_progress = 1\n";
    assert_eq!(find_marker(own, "acp_progress"), None);
    assert_eq!(
        find_marker("const acpProgressBar = 1;", "acpProgress"),
        None
    );
    let left = "x = 1\nawait acp_progress.emitter(conn).session_update()\n";
    assert_eq!(find_marker(left, "acp_progress"), Some(12));
    assert_eq!(find_marker("mod acp_progress;", "acp_progress"), Some(4));
    // acp-patch's private helpers begin `_` + marker
    assert_eq!(
        find_marker("self._acp_progress_start()", "acp_progress"),
        Some(6)
    );
    // a prefix marker matches inside the names it begins
    assert_eq!(
        find_marker("self._acp_progress_start()", "_acp_progress_"),
        Some(5)
    );
}

#[test]
fn finds_the_occurrence_covering_the_line_and_the_end_of_file_form() {
    let src = "a\nx = 1\nb\nx = 1\nc";
    // the text itself first, then its end-of-file form (the caller keeps that one only
    // at the end of the file)
    assert_eq!(
        occurrences(src, "x = 1\n", 4),
        vec![(10, 16, false), (9, 15, true)]
    );
    assert_eq!(occurrences(src, "x = 1\n", 2)[0], (2, 8, false));
    assert!(occurrences(src, "x = 1\n", 3).iter().all(|o| o.2));
    // inserted after the last line of a file without a final newline
    let src = "a\nb\n    y()";
    assert_eq!(occurrences(src, "    y()\n", 3), vec![(3, 11, true)]);
    // a text that starts with the line ending of the line before
    let src = "def f():\n    pass\n\n\ndef g():\n    pass\n";
    assert_eq!(
        occurrences(src, "\n\ndef g():\n    pass\n", 5),
        vec![(18, 38, false)]
    );
}

#[test]
fn whole_file_parts_delete_the_file_and_others_become_removals() {
    let module = SourceFile::from_text(
        "/t/acp_progress.py".into(),
        "acp_progress.py".into(),
        "# acp-patch: runtime\nX = 1\n".into(),
    );
    let agent = SourceFile::from_text(
        "/t/agent.py".into(),
        "agent.py".into(),
        "import acp_progress\nclass A:\n    pass\n".into(),
    );
    let part = |file, text: &str, present| Part {
        checks: &[],
        label: "piece",
        file,
        offset: 0,
        replaces: 0,
        text: text.into(),
        present,
        present_at: None,
        anchor_line: 1,
        restore: String::new(),
    };
    let inv = Inventory {
        files: vec![module, agent],
        parts: vec![
            part(0, "# acp-patch: runtime\nX = 1\n", Some(1)),
            part(1, "import acp_progress\n", Some(1)),
            part(1, "import acp_progress\n", Some(1)), // the same insertion twice
            part(1, "", Some(2)),                      // the agent's own: stays
            part(1, "missing\n", None),
        ],
        marker: "acp_progress",
    };
    let (plan, removed) = removal_plan(&inv).unwrap();
    assert_eq!(removed.len(), 2);
    let m = plan
        .files
        .iter()
        .find(|f| f.file.rel == "acp_progress.py")
        .unwrap();
    assert!(m.delete);
    let a = plan
        .files
        .iter()
        .find(|f| f.file.rel == "agent.py")
        .unwrap();
    assert_eq!(a.new_text(), "class A:\n    pass\n");
}

#[test]
fn identical_blocks_inserted_several_times_are_each_taken_out_once() {
    let text = "    _acp_progress_complete(self)\n";
    let src = format!("try:\n{text}{text}    x()\nexcept E:\n{text}    raise\n");
    let f = SourceFile::from_text("/t/a.py".into(), "a.py".into(), src);
    let part = |line| Part {
        checks: &[],
        label: "hook complete",
        file: 0,
        offset: 0,
        replaces: 0,
        text: text.into(),
        present: Some(line),
        present_at: None,
        anchor_line: line,
        restore: String::new(),
    };
    let inv = Inventory {
        files: vec![f],
        // two adjacent copies (lines 2 and 3), one more at line 6; line 6 reported twice
        parts: vec![part(2), part(3), part(6), part(6)],
        marker: "_acp_progress_",
    };
    let (plan, removed) = removal_plan(&inv).unwrap();
    assert_eq!(removed.len(), 3);
    assert_eq!(
        plan.files[0].new_text(),
        "try:\n    x()\nexcept E:\n    raise\n"
    );
}

#[test]
fn an_edited_insertion_is_refused_with_its_line() {
    let f = SourceFile::from_text(
        "/t/a.py".into(),
        "a.py".into(),
        "x = 1\n    _acp_progress_start(self, 'edited')\n".into(),
    );
    let inv = Inventory {
        files: vec![f],
        parts: vec![Part {
            checks: &[],
            label: "hook start",
            file: 0,
            offset: 0,
            replaces: 0,
            text: "    _acp_progress_start(self)\n".into(),
            present: Some(2),
            present_at: None,
            anchor_line: 2,
            restore: String::new(),
        }],
        marker: "_acp_progress_",
    };
    let e = removal_plan(&inv).err().unwrap().to_string();
    assert!(e.starts_with("a.py:2: the hook start"), "{e}");
    let text = "def f():\n    a = 1\n    b = 2\n";
    let src = "x\ndef f():\n    a = 1\n    b = 3\ny\n";
    assert_eq!(first_difference(src, text, 2), (4, "    b = 2"));
}
