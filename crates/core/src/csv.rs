//! CSV records as podium's import reads them, on the server's HTTP import
//! stream and in the client's own import alike: one parser, so both sides
//! split a record into the same fields.

/// The fields of one CSV record (RFC 4180: `"` quotes a field, `""` is a
/// quote inside one; line breaks may sit inside quotes).
pub fn csv_fields(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = s;
    loop {
        if let Some(q) = rest.strip_prefix('"') {
            let mut field = String::new();
            let mut r = q;
            loop {
                let Some(k) = r.find('"') else {
                    return Err("a quoted field is not closed".into());
                };
                field.push_str(&r[..k]);
                r = &r[k + 1..];
                match r.strip_prefix('"') {
                    Some(after) => {
                        field.push('"');
                        r = after;
                    }
                    None => break,
                }
            }
            out.push(field);
            if r.is_empty() {
                return Ok(out);
            }
            match r.strip_prefix(',') {
                Some(after) => rest = after,
                None => return Err("a quoted field is followed by more than a comma".into()),
            }
        } else {
            match rest.find(',') {
                Some(k) => {
                    out.push(rest[..k].to_string());
                    rest = &rest[k + 1..];
                }
                None => {
                    out.push(rest.to_string());
                    return Ok(out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_follow_rfc4180() {
        assert_eq!(csv_fields("a,1,bob").unwrap(), ["a", "1", "bob"]);
        assert_eq!(
            csv_fields(r#""a,b",2,"say ""hi""""#).unwrap(),
            ["a,b", "2", r#"say "hi""#]
        );
        assert_eq!(csv_fields("a,1,").unwrap(), ["a", "1", ""]);
        assert_eq!(csv_fields("\"x\ny\",3").unwrap(), ["x\ny", "3"]);
        assert!(csv_fields("\"open,1").is_err());
        assert!(csv_fields("\"a\"b,1").is_err());
    }
}
