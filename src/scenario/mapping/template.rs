//! Request templates of a mapped API (`[api]`): `{placeholder}`s filled
//! per op, `${NAME}` secrets read once from the environment, and the
//! redaction that keeps those secrets out of everything the bench writes.
//!
//! A secret's value exists only in the requests sent: templates keep the
//! `${NAME}` text (so the saved scenario never holds it), and every text
//! the client records (errors, non-conforming examples) goes through
//! [`Secrets::redact`].
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

use std::collections::BTreeMap;

/// The placeholders an op fills in.
pub const PLACEHOLDERS: &[&str] = &[
    "event_id",
    "project",
    "fingerprint",
    "message",
    "release",
    "group_id",
    "now_ms",
    "items",
    "msg_id",
    "dup_id",
];

/// How a placeholder's value is written into the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// As is (headers, `{items}`).
    Raw,
    /// Inside a JSON string: escaped, without the quotes.
    Json,
    /// Inside a URL path or query: percent-encoded.
    Url,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Var(String),
    Secret(String),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
    escape: Escape,
}

/// Values for one request's placeholders.
pub type Vars<'a> = [(&'a str, &'a str)];

impl Template {
    /// Parses `text`; `allowed` are the placeholders it may use. A `{` not
    /// followed by a lower-case name and `}` is literal (JSON bodies are
    /// full of braces). Errors: an unknown `{name}`, a known placeholder
    /// that is not `allowed`, or an unclosed or malformed `${NAME}`.
    pub fn parse(text: &str, allowed: &[&str], escape: Escape) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        while let Some(i) = rest.find(['{', '$', '}']) {
            lit.push_str(&rest[..i]);
            let tail = &rest[i..];
            if let Some(t) = tail.strip_prefix("${") {
                let end = t
                    .find('}')
                    .ok_or_else(|| format!("`${{` without its `}}` in {text:?}"))?;
                let name = &t[..end];
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(format!(
                        "`${{{name}}}` is no environment variable name (letters, digits, _)"
                    ));
                }
                if !lit.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut lit)));
                }
                parts.push(Part::Secret(name.to_string()));
                rest = &t[end + 1..];
            } else if let Some(t) = tail.strip_prefix('{') {
                let name_end = t.find('}');
                let name = name_end.map(|e| &t[..e]);
                match name {
                    Some(n) if PLACEHOLDERS.contains(&n) => {
                        if !allowed.contains(&n) {
                            return Err(format!(
                                "`{{{n}}}` cannot be used here; {}",
                                may_use(allowed)
                            ));
                        }
                        if !lit.is_empty() {
                            parts.push(Part::Text(std::mem::take(&mut lit)));
                        }
                        parts.push(Part::Var(n.to_string()));
                        rest = &t[n.len() + 1..];
                    }
                    Some(n)
                        if !n.is_empty()
                            && n.chars().all(|c| c.is_ascii_lowercase() || c == '_') =>
                    {
                        return Err(format!(
                            "unknown placeholder `{{{n}}}`; {}",
                            may_use(allowed)
                        ));
                    }
                    _ => {
                        lit.push('{');
                        rest = t;
                    }
                }
            } else {
                // A lone `}` or `$`.
                lit.push_str(&tail[..1]);
                rest = &tail[1..];
            }
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            parts.push(Part::Text(lit));
        }
        Ok(Template { parts, escape })
    }

    /// The environment variables the template reads.
    pub fn secrets(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Secret(n) => Some(n.as_str()),
            _ => None,
        })
    }

    /// The text with `vars` filled in and secrets from `secrets`; a
    /// placeholder without a value is left empty.
    pub fn render(&self, vars: &Vars<'_>, secrets: &Secrets) -> String {
        // Room for the text and a few short values: one allocation for
        // most requests' bodies instead of one per doubling.
        let text: usize = self
            .parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.len(),
                _ => 32,
            })
            .sum();
        let mut out = String::with_capacity(text);
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Var(n) => {
                    let v = vars.iter().find(|(k, _)| k == n).map_or("", |(_, v)| *v);
                    // `{items}` is already JSON.
                    let escape = if n == "items" {
                        Escape::Raw
                    } else {
                        self.escape
                    };
                    push_escaped(&mut out, v, escape);
                }
                Part::Secret(n) => push_escaped(&mut out, secrets.get(n), self.escape),
            }
        }
        out
    }
}

fn push_escaped(out: &mut String, v: &str, escape: Escape) {
    match escape {
        Escape::Raw => out.push_str(v),
        // serde_json escapes only these (`"`, `\\` and the controls):
        // a value without them is its own JSON text.
        Escape::Json if !v.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) => out.push_str(v),
        Escape::Json => {
            let quoted = serde_json::to_string(v).expect("a string serializes");
            out.push_str(&quoted[1..quoted.len() - 1]);
        }
        Escape::Url => {
            for b in v.bytes() {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    out.push(b as char);
                } else {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
        }
    }
}

/// The secrets a scenario's templates name, read from the environment once.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    values: BTreeMap<String, String>,
}

impl Secrets {
    /// Reads `names` from the environment. Errors: a variable that is not
    /// set or not UTF-8 (naming it, never its value).
    pub fn from_env<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Secrets, String> {
        let mut values = BTreeMap::new();
        for n in names {
            let v = std::env::var(n).map_err(|_| {
                format!("the environment variable {n} (named as ${{{n}}}) is not set")
            })?;
            values.insert(n.to_string(), v);
        }
        Ok(Secrets { values })
    }

    fn get(&self, name: &str) -> &str {
        self.values.get(name).map_or("", String::as_str)
    }

    /// `text` with every secret's value (and its percent-encoded and
    /// JSON-escaped forms) replaced by `${NAME}`. Values shorter than 4
    /// bytes are replaced too: a leaked short secret is still a leak.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (name, value) in &self.values {
            if value.is_empty() {
                continue;
            }
            let mut forms = vec![value.clone()];
            for escape in [Escape::Json, Escape::Url] {
                let mut f = String::new();
                push_escaped(&mut f, value, escape);
                forms.push(f);
            }
            for f in forms {
                if out.contains(&f) {
                    out = out.replace(&f, &format!("${{{name}}}"));
                }
            }
        }
        out
    }

    /// Whether any secret is held.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// What a template may use, for an error: its placeholders, or that it
/// takes none (the health and export requests name only fixed paths).
fn may_use(allowed: &[&str]) -> String {
    if allowed.is_empty() {
        return "this template takes no placeholders".to_string();
    }
    let names: Vec<String> = allowed.iter().map(|a| format!("{{{a}}}")).collect();
    format!("this template may use {}", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_without_placeholders_says_it_takes_none() {
        let e = Template::parse("/health/{project}", &[], Escape::Url).unwrap_err();
        assert_eq!(
            e,
            "`{project}` cannot be used here; this template takes no placeholders"
        );
        let e = Template::parse("/g/{nope}", &["group_id"], Escape::Url).unwrap_err();
        assert_eq!(
            e,
            "unknown placeholder `{nope}`; this template may use {group_id}"
        );
    }

    #[test]
    fn fills_escapes_and_keeps_json_braces() {
        let t = Template::parse(
            r#"{"id": "{event_id}", "m": "{message}", "k": "${TOKEN_X}", "o": {"a": 1}}"#,
            &["event_id", "message"],
            Escape::Json,
        )
        .unwrap();
        let s = Secrets {
            values: BTreeMap::from([("TOKEN_X".into(), "s3\"cr".into())]),
        };
        let out = t.render(&[("event_id", "e1"), ("message", "a \"q\"\n")], &s);
        assert_eq!(
            out,
            r#"{"id": "e1", "m": "a \"q\"\n", "k": "s3\"cr", "o": {"a": 1}}"#
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["m"], "a \"q\"\n");
        assert_eq!(s.redact(&out).matches("${TOKEN_X}").count(), 1);
        assert!(!s.redact(&out).contains("s3"));
    }

    #[test]
    fn urls_are_percent_encoded_and_placeholders_checked() {
        let t = Template::parse(
            "/api/{project}/x?fp={fingerprint}",
            &["project", "fingerprint"],
            Escape::Url,
        )
        .unwrap();
        assert_eq!(
            t.render(
                &[("project", "r1.p 0"), ("fingerprint", "a/b")],
                &Secrets::default()
            ),
            "/api/r1.p%200/x?fp=a%2Fb"
        );
        assert!(Template::parse("/g/{group_id}", &["project"], Escape::Url)
            .unwrap_err()
            .contains("cannot be used here"));
        assert!(Template::parse("/g/{grup_id}", &["group_id"], Escape::Url)
            .unwrap_err()
            .contains("unknown placeholder"));
        assert!(Template::parse("${BAD-NAME}", &[], Escape::Raw).is_err());
        assert!(Template::parse("${OPEN", &[], Escape::Raw).is_err());
        assert_eq!(
            Template::parse(r#"{"a":{"b":1}}"#, &[], Escape::Raw)
                .unwrap()
                .render(&[], &Secrets::default()),
            r#"{"a":{"b":1}}"#
        );
    }
}
