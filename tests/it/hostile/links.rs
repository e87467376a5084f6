//! Links.

use super::*;

#[test]
fn symlinked_file_to_patch_is_reported_never_written_through() {
    let outside = tempfile::tempdir().unwrap();
    let dir = tree(PY);
    let real = outside.path().join("agent.py");
    std::fs::rename(dir.path().join(AGENT), &real).unwrap();
    std::os::unix::fs::symlink(&real, dir.path().join(AGENT)).unwrap();
    let outside_before = std::fs::read(&real).unwrap();
    apply_case(
        dir.path(),
        &[],
        1,
        &[AGENT, "symbolic link", "never writes through a link"],
    );
    apply_case(dir.path(), &["--dry-run"], 1, &[AGENT, "symbolic link"]);
    assert_eq!(std::fs::read(&real).unwrap(), outside_before);
    // verify reads through the link
    let v = run(&["verify", path_str(dir.path())]);
    assert_eq!(v.code, 1, "{}", v.stderr);
    assert!(v.stdout.contains("missing"), "{}", v.stdout);
}

#[test]
fn symlink_to_a_file_outside_path_is_never_written() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("shared.py");
    std::fs::write(&target, "import acp\nX = 1\n").unwrap();
    let dir = tree(PY);
    std::os::unix::fs::symlink(&target, dir.path().join("streamy/shared.py")).unwrap();
    apply_case(dir.path(), &[], 0, &["inserted"]);
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "import acp\nX = 1\n"
    );
}

#[test]
fn symlink_loops_and_dangling_links_do_not_hang() {
    let dir = tree(PY);
    std::os::unix::fs::symlink(dir.path(), dir.path().join("streamy/loop")).unwrap();
    std::os::unix::fs::symlink("b", dir.path().join("a")).unwrap();
    std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
    std::os::unix::fs::symlink("nowhere.py", dir.path().join("dangling.py")).unwrap();
    apply_case(
        dir.path(),
        &[],
        0,
        &[
            "dangling.py: a symbolic link to nowhere.py, which does not exist",
            "inserted",
        ],
    );
}
