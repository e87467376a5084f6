//! What a name read by inserted code is bound to: a parameter of the handler, a module-level
//! declaration or import of its file, a global of the JavaScript runtime, or a field of the
//! handler's class assigned before any method runs.

use crate::lang::anchors::Site;
use crate::lang::parts::Parsed;
use crate::lang::typescript::syntax::*;
use tree_sitter::Node;

/// Globals every JavaScript runtime (or Node) has.
const GLOBALS: &[&str] = &[
    "process",
    "console",
    "JSON",
    "globalThis",
    "Promise",
    "Date",
    "Math",
    "Object",
    "Array",
    "String",
    "Number",
    "Boolean",
    "Symbol",
    "Error",
    "Buffer",
    "undefined",
    "setTimeout",
    "setInterval",
    "queueMicrotask",
];

/// Where a name is bound, for the report: "parameter of X.prompt", "import at src/a.ts:3".
pub type Binding = (usize, usize, String);

use crate::lang::tree::line;

/// Identifiers bound by a pattern (a parameter, a declarator's name).
pub fn pattern_names<'t>(pattern: Node<'t>, src: &str, out: &mut Vec<(String, Node<'t>)>) {
    match pattern.kind() {
        "identifier" | "shorthand_property_identifier_pattern" => {
            out.push((text(pattern, src).to_string(), pattern))
        }
        "type_annotation" | "type_identifier" | "predefined_type" | "property_identifier" => {}
        "pair_pattern" => {
            if let Some(v) = pattern.child_by_field_name("value") {
                pattern_names(v, src, out);
            }
        }
        "assignment_pattern" | "object_assignment_pattern" => {
            if let Some(l) = pattern
                .child_by_field_name("left")
                .or_else(|| pattern.named_child(0))
            {
                pattern_names(l, src, out);
            }
        }
        "required_parameter" | "optional_parameter" => {
            if let Some(p) = pattern.child_by_field_name("pattern") {
                pattern_names(p, src, out);
            }
        }
        _ => {
            for c in named_children(pattern) {
                pattern_names(c, src, out);
            }
        }
    }
}

/// The names a function's parameters bind.
pub fn parameter_names<'t>(func: Node<'t>, src: &str) -> Vec<(String, Node<'t>)> {
    let mut out = Vec::new();
    if let Some(params) = func.child_by_field_name("parameters") {
        pattern_names(params, src, &mut out);
    } else if let Some(p) = func.child_by_field_name("parameter") {
        pattern_names(p, src, &mut out); // `x => ...`
    }
    out
}

/// Module-level names of a file: imports, declarations, functions, classes, enums.
pub fn module_names<'t>(root: Node<'t>, src: &str) -> Vec<(String, Node<'t>)> {
    let mut out = Vec::new();
    for n in named_children(root) {
        let decl = if n.kind() == "export_statement" {
            match n.child_by_field_name("declaration") {
                Some(d) => d,
                None => continue,
            }
        } else {
            n
        };
        match decl.kind() {
            "import_statement" => {
                for id in descendants(decl, "identifier") {
                    // `import { a as b }`: `b` is bound (the alias), `a` is the export's name
                    let aliased_away = id.parent().is_some_and(|p| {
                        p.kind() == "import_specifier"
                            && p.child_by_field_name("alias").is_some()
                            && p.child_by_field_name("name") == Some(id)
                    });
                    if !aliased_away {
                        out.push((text(id, src).to_string(), id));
                    }
                }
            }
            "import_alias" => {
                if let Some(id) = decl.named_child(0) {
                    out.push((text(id, src).to_string(), id));
                }
            }
            "lexical_declaration" | "variable_declaration" => {
                for d in named_children(decl)
                    .into_iter()
                    .filter(|d| d.kind() == "variable_declarator")
                {
                    if let Some(name) = d.child_by_field_name("name") {
                        pattern_names(name, src, &mut out);
                    }
                }
            }
            "function_declaration"
            | "generator_function_declaration"
            | "class_declaration"
            | "abstract_class_declaration"
            | "enum_declaration" => {
                if let Some(name) = decl.child_by_field_name("name") {
                    out.push((text(name, src).to_string(), name));
                }
            }
            _ => {}
        }
    }
    out
}

/// The names an expression reads (not property names, not its own arrow parameters), with
/// whether it reads `this`.
pub fn reads<'t>(expr: Node<'t>, src: &str) -> (Vec<(String, Node<'t>)>, bool) {
    let mut own = Vec::new();
    for f in descendants(expr, "arrow_function") {
        own.extend(parameter_names(f, src).into_iter().map(|(n, _)| n));
    }
    let mut names = Vec::new();
    let mut this = false;
    walk(expr, &mut |n| match n.kind() {
        "formal_parameters" | "type_annotation" | "type_arguments" => false,
        "this" => {
            this = true;
            false
        }
        "identifier" | "shorthand_property_identifier" => {
            let name = text(n, src).to_string();
            let is_arrow_param = n.parent().is_some_and(|p| {
                p.kind() == "arrow_function" && p.child_by_field_name("parameter") == Some(n)
            });
            if !own.contains(&name) && !is_arrow_param && !names.iter().any(|(x, _)| *x == name) {
                names.push((name, n));
            }
            false
        }
        _ => true,
    });
    (names, this)
}

/// Where `name`, read at the entry of `func` in file `file`, is bound: a parameter of `func`
/// (or of a function around it), a module-level name, or a global.
pub fn bound_at_entry(files: &[Parsed], file: usize, func: Node, name: &str) -> Option<Binding> {
    let src = files[file].file.text.as_ref();
    let mut cur = Some(func);
    while let Some(f) = cur {
        if is_function(f)
            && let Some((_, n)) = parameter_names(f, src).into_iter().find(|(p, _)| p == name)
        {
            return Some((file, line(n), "a parameter".into()));
        }
        cur = f.parent();
    }
    if let Some((_, n)) = module_names(files[file].tree().root_node(), src)
        .into_iter()
        .find(|(m, _)| m == name)
    {
        return Some((file, line(n), "declared at module level".into()));
    }
    GLOBALS
        .contains(&name)
        .then(|| (file, line(func), "a global".into()))
}

/// Whether `this` inside `func` is the instance of a class: a method, or an arrow function
/// (any depth) inside one. Returns that class.
pub fn this_class(func: Node) -> Option<Node> {
    let mut cur = Some(func);
    while let Some(f) = cur {
        match f.kind() {
            "method_definition" | "public_field_definition" => {
                return enclosing_class(f);
            }
            "function_declaration" | "function_expression" | "generator_function" => return None,
            "class_declaration" | "abstract_class_declaration" | "class" => return Some(f),
            _ => {}
        }
        cur = f.parent();
    }
    None
}

pub fn enclosing_class(node: Node) -> Option<Node> {
    let mut cur = node.parent();
    while let Some(n) = cur {
        if matches!(
            n.kind(),
            "class_declaration" | "abstract_class_declaration" | "class"
        ) {
            return Some(n);
        }
        cur = n.parent();
    }
    None
}

/// Classes named `name` in the tree (a file that does not hold the name is not parsed for it).
pub fn classes_named<'t>(files: &'t [Parsed], name: &str) -> Vec<(usize, Node<'t>)> {
    let mut out = Vec::new();
    if name.is_empty() {
        return out;
    }
    for (i, p) in files.iter().enumerate() {
        if !crate::needles::contains(&p.file.text, name) {
            continue;
        }
        for c in classes(p.tree().root_node()) {
            if name_of(c, &p.file.text) == name {
                out.push((i, c));
            }
        }
    }
    out
}

/// What a class extends (`Base` of `class A extends Base`), as the class spells it.
pub fn extended(class: Node) -> Option<Node> {
    let heritage = named_children(class)
        .into_iter()
        .find(|n| n.kind() == "class_heritage")?;
    named_children(heritage)
        .into_iter()
        .find(|n| n.kind() == "extends_clause")?
        .child_by_field_name("value")
}

/// The class a class extends, when it is in the tree (one of that name).
pub fn base_class<'t>(
    files: &'t [Parsed],
    file: usize,
    class: Node<'t>,
) -> Option<(usize, Node<'t>)> {
    let value = extended(class)?;
    class_in_scope(files, file, text(value, files[file].file.text.as_ref()))
}

/// The class a name in file `file` refers to: the one that file declares (a module's own
/// declaration: in a bundle that holds several builds of one module, each refers to its own),
/// else the one class of that name in the tree.
pub fn class_in_scope<'t>(
    files: &'t [Parsed],
    file: usize,
    name: &str,
) -> Option<(usize, Node<'t>)> {
    if let Some(found) = namespace_class(files, file, name) {
        return match found[..] {
            [one] => Some(one),
            _ => None,
        };
    }
    let found = classes_named(files, name);
    let own: Vec<&(usize, Node)> = found.iter().filter(|(f, _)| *f == file).collect();
    match (&own[..], &found[..]) {
        ([one], _) => Some(**one),
        ([], [one]) => Some(*one),
        _ => None,
    }
}

/// A class named through a module object, `ns.Class`: `ns` bound at the file's top level by
/// `require("./x")` (TypeScript's CommonJS output, `new x_1.Class(...)`, through
/// `__importStar(...)` too) or `import * as ns from "./x"`: the classes of that name the module
/// declares, else every class of that name in the tree. `None` for a name without one dot.
pub fn namespace_class<'t>(
    files: &'t [Parsed],
    file: usize,
    name: &str,
) -> Option<Vec<(usize, Node<'t>)>> {
    let (ns, prop) = name.split_once('.')?;
    if prop.contains('.') || ns.is_empty() || prop.is_empty() {
        return None;
    }
    let src = files[file].file.text.as_ref();
    let spec = named_children(files[file].tree().root_node())
        .into_iter()
        .find_map(|top| match top.kind() {
            "import_statement" => descendants(top, "namespace_import")
                .into_iter()
                .any(|n| named_children(n).iter().any(|i| text(*i, src) == ns))
                .then(|| top.child_by_field_name("source"))
                .flatten()
                .and_then(|s| string_value(s, src)),
            "lexical_declaration" | "variable_declaration" => {
                descendants(top, "variable_declarator")
                    .into_iter()
                    .filter(|d| {
                        d.child_by_field_name("name")
                            .is_some_and(|n| text(n, src) == ns)
                    })
                    .find_map(|d| {
                        descendants(d.child_by_field_name("value")?, "call_expression")
                            .into_iter()
                            .filter(|c| {
                                c.child_by_field_name("function")
                                    .is_some_and(|f| text(f, src) == "require")
                            })
                            .find_map(|c| string_value(*arguments(c).first()?, src))
                    })
            }
            _ => None,
        });
    let named = classes_named(files, prop);
    let targets = spec
        .map(|s| crate::lang::typescript::relative_targets(&files[file].file.rel, s))
        .unwrap_or_default();
    let from: Vec<(usize, Node)> = named
        .iter()
        .copied()
        .filter(|(f, _)| targets.contains(&files[*f].file.rel))
        .collect();
    Some(if from.is_empty() { named } else { from })
}

/// A class member (method, or a field holding a function) by name, own or inherited.
pub fn member<'t>(
    files: &'t [Parsed],
    file: usize,
    class: Node<'t>,
    name: &str,
) -> Option<(usize, Node<'t>)> {
    let (mut file, mut class) = (file, class);
    for _ in 0..8 {
        let src = files[file].file.text.as_ref();
        if let Some(m) = class_members(class)
            .into_iter()
            .find(|m| member_name(*m, src) == name)
        {
            return Some((file, m));
        }
        (file, class) = base_class(files, file, class)?;
    }
    None
}

/// The members of a class body (methods and fields), in order.
pub fn class_members(class: Node) -> Vec<Node> {
    class
        .child_by_field_name("body")
        .map(|b| {
            named_children(b)
                .into_iter()
                .filter(|m| matches!(m.kind(), "method_definition" | "public_field_definition"))
                .collect()
        })
        .unwrap_or_default()
}

pub fn member_name<'a>(m: Node, src: &'a str) -> &'a str {
    m.child_by_field_name("name")
        .or_else(|| m.child_by_field_name("property"))
        .map(|n| text(n, src))
        .unwrap_or("")
}

/// The function a member is: the method itself, or the arrow / function a field holds.
pub fn member_function(m: Node) -> Option<Node> {
    match m.kind() {
        "method_definition" => Some(m),
        "public_field_definition" => m
            .child_by_field_name("value")
            .filter(|v| matches!(v.kind(), "arrow_function" | "function_expression")),
        _ => None,
    }
}

/// Where a field `this.<name>` of a class gets its value before any method runs: a parameter
/// property, a field initializer, or an assignment in the constructor (own or inherited).
/// The site is that of the initializer's field, the parameter or the assignment, with how.
pub fn field_bound(
    files: &[Parsed],
    file: usize,
    class: Node,
    name: &str,
) -> Option<(Site, String)> {
    let (mut file, mut class) = (file, class);
    for _ in 0..8 {
        let src = files[file].file.text.as_ref();
        for m in class_members(class) {
            if m.kind() == "public_field_definition"
                && member_name(m, src) == name
                && m.child_by_field_name("value").is_some()
            {
                return Some((Site::of_node(file, m), "a field initializer".into()));
            }
            if m.kind() == "method_definition" && member_name(m, src) == "constructor" {
                for (n, p) in parameters(m, src) {
                    if n == name && is_parameter_property(p) {
                        return Some((
                            Site::of_node(file, p),
                            "a constructor parameter property".into(),
                        ));
                    }
                }
                if let Some(body) = body(m) {
                    for a in descendants(body, "assignment_expression") {
                        let left = a.child_by_field_name("left");
                        if left.is_some_and(|l| text(l, src) == format!("this.{name}")) {
                            return Some((
                                Site::of_node(file, a),
                                "assigned in the constructor".into(),
                            ));
                        }
                    }
                }
            }
        }
        (file, class) = base_class(files, file, class)?;
    }
    None
}

/// `constructor(private readonly conn: X)`: a parameter that is also a field.
pub fn is_parameter_property(param: Node) -> bool {
    let mut c = param.walk();
    param.children(&mut c).any(|n| {
        matches!(
            n.kind(),
            "accessibility_modifier" | "readonly" | "override_modifier"
        )
    })
}

/// The class a field holds an instance of, when a constructor (own or inherited) builds it
/// there: `this.<field> = new Y(...)`, `Y` one class of that name in the tree; with the `new`.
pub fn constructed<'t>(
    files: &'t [Parsed],
    file: usize,
    class: Node<'t>,
    field: &str,
) -> Option<(usize, Node<'t>, Node<'t>)> {
    let (mut file, mut class) = (file, class);
    for _ in 0..8 {
        let src = files[file].file.text.as_ref();
        let ctor = class_members(class)
            .into_iter()
            .find(|m| m.kind() == "method_definition" && member_name(*m, src) == "constructor");
        if let Some(body) = ctor.and_then(body) {
            for a in descendants(body, "assignment_expression") {
                let (Some(l), Some(r)) = (
                    a.child_by_field_name("left"),
                    a.child_by_field_name("right"),
                ) else {
                    continue;
                };
                if text(l, src) != format!("this.{field}") || r.kind() != "new_expression" {
                    continue;
                }
                let name = r
                    .child_by_field_name("constructor")
                    .filter(|c| matches!(c.kind(), "identifier" | "member_expression"))
                    .map(|c| text(c, src))?;
                let (f, c) = class_in_scope(files, file, name)?;
                return Some((f, c, r));
            }
        }
        (file, class) = base_class(files, file, class)?;
    }
    None
}

/// Where the last field of a path `this.a.b` gets its value before any method runs: `a` as
/// [`field_bound`] finds it in the class, each next field in the class the one before it is
/// built as ([`constructed`]); with how, field by field.
pub fn path_bound(
    files: &[Parsed],
    file: usize,
    class: Node,
    path: &[&str],
) -> Option<(Site, String)> {
    if let [field] = path {
        return field_bound(files, file, class, field);
    }
    let (mut file, mut class) = (file, class);
    let mut hows = Vec::new();
    let mut site = None;
    for (k, field) in path.iter().enumerate() {
        if k > 0 && field.starts_with('#') {
            return None; // an ES private field is read by its own class only
        }
        let (s, how) = field_bound(files, file, class, field)?;
        hows.push(format!(
            "{}.{field}: {how}",
            name_of(class, &files[file].file.text)
        ));
        site = Some(s);
        if k + 1 < path.len() {
            (file, class, _) = constructed(files, file, class, field)?;
        }
    }
    Some((site?, hows.join("; ")))
}

/// The fields of `this.a.b` or `this.a["b"]` (as inserted code reads a connection another
/// object of the class keeps): `["a", "b"]`.
pub fn this_path<'t>(node: Node, src: &'t str) -> Option<Vec<&'t str>> {
    match node.kind() {
        "this" => Some(Vec::new()),
        "parenthesized_expression" => this_path(node.named_child(0)?, src),
        "member_expression" => {
            let mut path = this_path(node.child_by_field_name("object")?, src)?;
            path.push(text(node.child_by_field_name("property")?, src));
            Some(path)
        }
        "subscript_expression" => {
            let mut path = this_path(node.child_by_field_name("object")?, src)?;
            path.push(string_value(node.child_by_field_name("index")?, src)?);
            Some(path)
        }
        _ => None,
    }
}

/// `private`/`protected` members of TypeScript are read from outside their class only with
/// `x["name"]` (the checker lets element access by a literal through).
pub fn is_hidden_member(files: &[Parsed], file: usize, class: Node, name: &str) -> bool {
    let src = files[file].file.text.as_ref();
    let hidden = |n: Node| {
        named_children(n).into_iter().any(|c| {
            c.kind() == "accessibility_modifier" && matches!(text(c, src), "private" | "protected")
        })
    };
    class_members(class).into_iter().any(|m| {
        (m.kind() == "public_field_definition" && member_name(m, src) == name && hidden(m))
            || (m.kind() == "method_definition"
                && member_name(m, src) == "constructor"
                && parameters(m, src)
                    .into_iter()
                    .any(|(n, p)| n == name && hidden(p)))
    })
}
