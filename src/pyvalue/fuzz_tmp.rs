#[test]
fn fuzz_dump() {
    use super::*;
    let Ok(input) = std::fs::read_to_string("/tmp/fz/cases.jsonl") else {
        return;
    };
    let mut out = String::new();
    for line in input.lines() {
        let (k, s): (String, String) = serde_json::from_str(line).unwrap_or_default();
        let r = match k.as_str() {
            "strrepr" => {
                let mut o = String::new();
                repr::str_repr(&s, &mut o);
                o
            }
            "floatrepr" => {
                let mut o = String::new();
                repr::float_repr(s.parse().unwrap_or(0.0), &mut o);
                o
            }
            "json" => match json::loads(&s) {
                Ok(v) => format!("OK {}", v.repr()),
                Err(e) => {
                    if e.msg.starts_with("Exceeds") {
                        "VERR".into()
                    } else {
                        format!("ERR {e}")
                    }
                }
            },
            "eq" => {
                let (a, b) = s.split_once('\0').unwrap_or_default();
                match (literal::literal_eval(a), literal::literal_eval(b)) {
                    (Ok(x), Ok(y)) => {
                        if x.py_eq(&y) {
                            "True".into()
                        } else {
                            "False".into()
                        }
                    }
                    _ => "ERR".into(),
                }
            }
            "jeq" => {
                let (a, b) = s.split_once('\0').unwrap_or_default();
                match (json::loads(a), json::loads(b)) {
                    (Ok(x), Ok(y)) => {
                        if x.py_eq(&y) {
                            "True".into()
                        } else {
                            "False".into()
                        }
                    }
                    _ => "ERR".into(),
                }
            }
            _ => match literal::literal_eval(&s) {
                Ok(v) => format!("OK {}", v.repr()),
                Err(literal::LiteralError::Syntax(_)) => "SyntaxError".into(),
                Err(literal::LiteralError::Value(_)) => "ValueError".into(),
                Err(literal::LiteralError::Type(t)) => format!("TypeError {t}"),
            },
        };
        out.push_str(&serde_json::to_string(&r).unwrap_or_default());
        out.push('\n');
    }
    std::fs::write("/tmp/fz/actual.txt", out).ok();
}
