//! A small, strict reading of a Dockerfile's instructions, enough for what
//! the tests check: logical lines as Docker joins them (a trailing `\`
//! continues, comment and blank lines inside a continuation are dropped),
//! stages, `ARG`s, `LABEL`s, `COPY` flags, and the exec (JSON array) and
//! shell forms of `RUN`, `CMD` and `ENTRYPOINT`. What it does not read it
//! refuses, naming the line: an unknown instruction, one without
//! arguments, an unterminated quote, a `[` that is not a JSON array of
//! strings (Docker would silently run it as a shell command), heredocs, the
//! `escape` directive. `hadolint` (tests/deploy/docker.rs) is the real
//! parser and linter of the same file; this reads what the assertions need.

/// `ARG`s before the first `FROM`: (name, default).
pub type GlobalArgs = Vec<(String, Option<String>)>;

/// One stage, its instructions as (KEYWORD, arguments) in order.
#[derive(Debug)]
pub struct Stage {
    pub name: Option<String>,
    pub base: String,
    pub instructions: Vec<(String, String)>,
    /// `COPY`: (--from, sources, destination).
    pub copies: Vec<(Option<String>, Vec<String>, String)>,
    pub labels: Vec<(String, String)>,
    pub entrypoint: Option<Vec<String>>,
    pub cmd: Option<Vec<String>>,
}

impl Stage {
    pub fn all(&self, keyword: &str) -> Vec<&str> {
        self.instructions
            .iter()
            .filter(|(k, _)| k == keyword)
            .map(|(_, a)| a.as_str())
            .collect()
    }

    pub fn position(&self, pred: impl Fn(&str, &str) -> bool) -> Option<usize> {
        self.instructions.iter().position(|(k, a)| pred(k, a))
    }
}

const KEYWORDS: [&str; 18] = [
    "ADD",
    "ARG",
    "CMD",
    "COPY",
    "ENTRYPOINT",
    "ENV",
    "EXPOSE",
    "FROM",
    "HEALTHCHECK",
    "LABEL",
    "MAINTAINER",
    "ONBUILD",
    "RUN",
    "SHELL",
    "STOPSIGNAL",
    "USER",
    "VOLUME",
    "WORKDIR",
];

/// Parses a Dockerfile into its global `ARG`s and stages; Err names the
/// first line it refuses.
pub fn parse(text: &str) -> Result<(GlobalArgs, Vec<Stage>), String> {
    let mut global_args = Vec::new();
    let mut stages: Vec<Stage> = Vec::new();
    for (line, keyword, args) in logical_lines(text)? {
        let at = |e: String| format!("line {line}: {keyword} {e}");
        if keyword == "FROM" {
            stages.push(from(&args).map_err(at)?);
            continue;
        }
        let Some(stage) = stages.last_mut() else {
            if keyword != "ARG" {
                return Err(at("before the first FROM".into()));
            }
            global_args.push(arg(&args).map_err(at)?);
            continue;
        };
        let recorded = match keyword.as_str() {
            "ARG" => match arg(&args).map_err(at)? {
                (name, Some(value)) => format!("{name}={value}"),
                (name, None) => name,
            },
            "LABEL" => {
                for word in words(&args).map_err(at)? {
                    let (k, v) = word
                        .split_once('=')
                        .ok_or_else(|| at(format!("{word:?} is not key=value")))?;
                    stage.labels.push((k.to_owned(), v.to_owned()));
                }
                args
            }
            "RUN" => {
                let (_, rest) = flags(&args).map_err(at)?;
                command(rest).map_err(at)?.join(" ")
            }
            "CMD" => {
                let command = command(&args).map_err(at)?;
                let joined = command.join(" ");
                stage.cmd = Some(command);
                joined
            }
            "ENTRYPOINT" => {
                let command = command(&args).map_err(at)?;
                let joined = command.join(" ");
                stage.entrypoint = Some(command);
                joined
            }
            "COPY" | "ADD" => {
                let (flags, rest) = flags(&args).map_err(at)?;
                let mut paths = match exec(rest).map_err(at)? {
                    Some(paths) => paths,
                    None => words(rest).map_err(at)?,
                };
                let dest = paths
                    .pop()
                    .filter(|_| !paths.is_empty())
                    .ok_or_else(|| at("needs a source and a destination".into()))?;
                let recorded = format!("{} {dest}", paths.join(" "));
                if keyword == "COPY" {
                    let from = flags.into_iter().find(|(k, _)| k == "from");
                    stage.copies.push((from.and_then(|(_, v)| v), paths, dest));
                }
                recorded
            }
            _ => args,
        };
        stage.instructions.push((keyword, recorded));
    }
    if stages.is_empty() {
        return Err("no FROM".into());
    }
    Ok((global_args, stages))
}

/// The instructions as (first line, KEYWORD, arguments), continuation lines
/// joined as Docker joins them: the `\` and the line break go, nothing is
/// added.
fn logical_lines(text: &str) -> Result<Vec<(usize, String, String)>, String> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    let mut instructions_seen = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_start();
        if let Some(comment) = line.strip_prefix('#') {
            let directive = comment.trim_start().to_ascii_lowercase();
            if !instructions_seen && directive.starts_with("escape") && directive.contains('=') {
                return Err(format!(
                    "line {}: the escape directive is not read here",
                    i + 1
                ));
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        instructions_seen = true;
        // Docker strips an instruction's leading whitespace, not a
        // continuation line's.
        let part = if pending.is_some() { raw } else { line };
        let (start, mut text) = pending.take().unwrap_or((i + 1, String::new()));
        match part.trim_end_matches([' ', '\t']).strip_suffix('\\') {
            Some(head) => {
                text.push_str(head);
                pending = Some((start, text));
            }
            None => {
                text.push_str(part);
                out.push(instruction(start, &text)?);
            }
        }
    }
    if let Some((start, text)) = pending {
        out.push(instruction(start, &text)?);
    }
    Ok(out)
}

fn instruction(line: usize, text: &str) -> Result<(usize, String, String), String> {
    let text = text.trim();
    let (keyword, args) = text.split_once([' ', '\t']).unwrap_or((text, ""));
    let keyword = keyword.to_ascii_uppercase();
    if !KEYWORDS.contains(&keyword.as_str()) {
        return Err(format!("line {line}: no instruction {keyword}"));
    }
    let args = args.trim();
    if args.is_empty() {
        return Err(format!("line {line}: {keyword} without arguments"));
    }
    if args.contains("<<") {
        return Err(format!(
            "line {line}: {keyword}: heredocs are not read here"
        ));
    }
    Ok((line, keyword, args.to_owned()))
}

/// `FROM [--platform=…] image [AS name]`.
fn from(args: &str) -> Result<Stage, String> {
    let (_, rest) = flags(args)?;
    let words = words(rest)?;
    let (base, name) = match &words[..] {
        [image] => (image.clone(), None),
        [image, as_, name] if as_.eq_ignore_ascii_case("as") => (image.clone(), Some(name.clone())),
        _ => return Err(format!("{args:?} is not `image [AS name]`")),
    };
    Ok(Stage {
        name,
        instructions: vec![("FROM".into(), base.clone())],
        base,
        copies: Vec::new(),
        labels: Vec::new(),
        entrypoint: None,
        cmd: None,
    })
}

/// `ARG name[=default]`.
fn arg(args: &str) -> Result<(String, Option<String>), String> {
    match &words(args)?[..] {
        [one] => Ok(match one.split_once('=') {
            Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
            None => (one.clone(), None),
        }),
        _ => Err(format!("{args:?} is not one name[=default]")),
    }
}

/// `--name[=value]`.
type Flag = (String, Option<String>);

/// Leading `--name[=value]` flags, and the rest of the arguments.
fn flags(args: &str) -> Result<(Vec<Flag>, &str), String> {
    let mut flags = Vec::new();
    let mut rest = args.trim_start();
    while let Some(flag) = rest.strip_prefix("--") {
        let end = flag.find([' ', '\t']).unwrap_or(flag.len());
        let (name, value) = match flag[..end].split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (flag[..end].to_owned(), None),
        };
        if name.is_empty() {
            return Err("an empty flag".into());
        }
        flags.push((name, value));
        rest = flag[end..].trim_start();
    }
    Ok((flags, rest))
}

/// The exec form as its words, the shell form as `/bin/sh -c …`.
fn command(args: &str) -> Result<Vec<String>, String> {
    match exec(args)? {
        Some(words) if words.is_empty() => Err("an empty exec form".into()),
        Some(words) => Ok(words),
        None if args.is_empty() => Err("without a command".into()),
        None => Ok(vec!["/bin/sh".into(), "-c".into(), args.to_owned()]),
    }
}

/// `["a", "b"]`: Some(words); not starting with `[`: None.
fn exec(args: &str) -> Result<Option<Vec<String>>, String> {
    if !args.starts_with('[') {
        return Ok(None);
    }
    serde_json::from_str(args)
        .map(Some)
        .map_err(|e| format!("{args:?} starts with [ but is not a JSON array of strings: {e}"))
}

/// Words as Docker's shell lexer splits them: whitespace outside quotes
/// separates; single quotes keep everything; a bare `\` escapes the next
/// character, and inside double quotes it escapes `"`, `\`, `$` and `` ` ``. Variables stay as written (`${RUST_VERSION}`).
fn words(args: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = args.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_default();
                loop {
                    match chars.next().ok_or("an unterminated '")? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_default();
                loop {
                    match chars.next().ok_or("an unterminated \"")? {
                        '"' => break,
                        '\\' => match chars.next().ok_or("an unterminated \"")? {
                            c @ ('"' | '\\' | '$' | '`') => w.push(c),
                            c => {
                                w.push('\\');
                                w.push(c);
                            }
                        },
                        c => w.push(c),
                    }
                }
            }
            '\\' => word
                .get_or_insert_default()
                .push(chars.next().ok_or("a \\ at the end")?),
            c => word.get_or_insert_default().push(c),
        }
    }
    words.extend(word);
    Ok(words)
}
