//! The service's `/metrics` text, read strictly: the OpenMetrics 1.0 text
//! exposition that prometheus-client writes (`# HELP`, `# TYPE`, `# UNIT`,
//! samples, `# EOF`). A line it does not understand is an error naming the
//! line, never skipped, so a malformed exposition fails the test that reads
//! it. Exemplars and free comments are refused: the service writes neither.

use std::collections::{BTreeMap, BTreeSet};

/// One sample line: `name{label="value",…} value [timestamp]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// A parsed exposition: families' metadata by family name, and every sample
/// in order.
#[derive(Debug, Default)]
pub struct Exposition {
    pub help: BTreeMap<String, String>,
    pub types: BTreeMap<String, String>,
    pub units: BTreeMap<String, String>,
    pub samples: Vec<Sample>,
}

impl Exposition {
    /// Every sample name (`…_total`, `…_bucket`, `…_count`, gauges as is).
    pub fn names(&self) -> BTreeSet<&str> {
        self.samples.iter().map(|s| s.name.as_str()).collect()
    }

    /// The value of the series `name` with exactly `labels`.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let labels: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self.samples
            .iter()
            .find(|s| s.name == name && s.labels == labels)
            .map(|s| s.value)
    }
}

/// Parses `text`, or says which line is wrong and why.
pub fn parse(text: &str) -> Result<Exposition, String> {
    let mut out = Exposition::default();
    let mut family: Option<(String, String)> = None;
    let mut series = BTreeSet::new();
    let mut lines = text
        .strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .enumerate();
    let mut eof = false;
    for (i, line) in lines.by_ref() {
        let at = |e: String| format!("line {}: {e}: {line:?}", i + 1);
        if line == "# EOF" {
            eof = true;
            break;
        }
        if let Some(comment) = line.strip_prefix("# ") {
            let (kind, rest) = comment
                .split_once(' ')
                .ok_or_else(|| at("bare comment".into()))?;
            let (name, arg) = rest.split_once(' ').unwrap_or((rest, ""));
            check_name(name).map_err(at)?;
            let table = match kind {
                "HELP" => &mut out.help,
                "UNIT" => &mut out.units,
                "TYPE" => {
                    const TYPES: [&str; 8] = [
                        "counter",
                        "gauge",
                        "histogram",
                        "gaugehistogram",
                        "summary",
                        "stateset",
                        "info",
                        "unknown",
                    ];
                    if !TYPES.contains(&arg) {
                        return Err(at(format!("no metric type {arg:?}")));
                    }
                    family = Some((name.to_owned(), arg.to_owned()));
                    &mut out.types
                }
                _ => {
                    return Err(at(format!(
                        "a comment that is not HELP, TYPE or UNIT: {kind}"
                    )));
                }
            };
            if table.insert(name.to_owned(), arg.to_owned()).is_some() {
                return Err(at(format!("a second # {kind} for {name}")));
            }
            continue;
        }
        let sample = sample(line).map_err(at)?;
        let (name, kind) = family
            .as_ref()
            .ok_or_else(|| at("a sample before any # TYPE".into()))?;
        if !belongs(&sample.name, name, kind) {
            return Err(at(format!("not a sample of the {kind} {name}")));
        }
        if !series.insert((sample.name.clone(), sample.labels.clone())) {
            return Err(at("a second sample of the same series".into()));
        }
        out.samples.push(sample);
    }
    if !eof {
        return Err("no `# EOF` line".into());
    }
    match lines.next() {
        None => Ok(out),
        Some(_) => Err("`# EOF` is not the last line".into()),
    }
}

/// The sample names a family of each OpenMetrics type has.
fn belongs(sample: &str, family: &str, kind: &str) -> bool {
    let suffixes: &[&str] = match kind {
        "counter" => &["_total", "_created"],
        "histogram" => &["_bucket", "_count", "_sum", "_created"],
        "gaugehistogram" => &["_bucket", "_gcount", "_gsum"],
        "summary" => &["", "_count", "_sum", "_created"],
        "info" => &["_info"],
        _ => &[""],
    };
    sample
        .strip_prefix(family)
        .is_some_and(|rest| suffixes.contains(&rest))
}

fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':');
    if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
        Ok(())
    } else {
        Err(format!("{name:?} is not a metric name"))
    }
}

fn sample(line: &str) -> Result<Sample, String> {
    let end = line.find(['{', ' ']).ok_or("a sample without a value")?;
    let name = &line[..end];
    check_name(name)?;
    let (labels, rest) = match line[end..].strip_prefix('{') {
        Some(inner) => labels(inner)?,
        None => (BTreeMap::new(), &line[end..]),
    };
    let rest = rest.strip_prefix(' ').ok_or("no space before the value")?;
    if rest.contains('#') {
        return Err("an exemplar (not read here)".into());
    }
    let mut parts = rest.split(' ');
    let value = number(parts.next().unwrap_or_default())?;
    if let Some(timestamp) = parts.next() {
        number(timestamp)?;
    }
    if parts.next().is_some() {
        return Err("text after the timestamp".into());
    }
    Ok(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

/// `a="x",b="y\"z"}` and what follows the `}`.
fn labels(mut s: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut labels = BTreeMap::new();
    loop {
        if let Some(rest) = s.strip_prefix('}') {
            return Ok((labels, rest));
        }
        let (name, rest) = s.split_once("=\"").ok_or("a label without =\"")?;
        let mut chars = name.chars();
        let name_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !name_ok {
            return Err(format!("{name:?} is not a label name"));
        }
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let close = loop {
            match chars.next().ok_or("an unterminated label value")? {
                (i, '"') => break i,
                (_, '\\') => match chars.next().map(|(_, c)| c) {
                    Some('\\') => value.push('\\'),
                    Some('"') => value.push('"'),
                    Some('n') => value.push('\n'),
                    other => return Err(format!("the escape \\{other:?} in a label value")),
                },
                (_, c) => value.push(c),
            }
        };
        if labels.insert(name.to_owned(), value).is_some() {
            return Err(format!("the label {name} twice"));
        }
        s = &rest[close + 1..];
        if let Some(next) = s.strip_prefix(',') {
            s = next;
        } else if !s.starts_with('}') {
            return Err("no , or } after a label value".into());
        }
    }
}

/// An OpenMetrics number: a decimal or exponent float, `+Inf`, `-Inf` or
/// `NaN` (Rust's parser would also take `inf` and `infinity`).
fn number(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ if s
            .bytes()
            .any(|b| b.is_ascii_alphabetic() && b != b'e' && b != b'E') =>
        {
            Err(format!("{s:?} is not a number"))
        }
        _ => s.parse().map_err(|_| format!("{s:?} is not a number")),
    }
}
