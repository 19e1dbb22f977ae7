//! Slurm's compressed host lists: `node[01-03,07],gpu5` is node01, node02, node03, node07,
//! gpu5 (zero padding kept, several bracket groups multiply).

/// The hosts of a compressed list, in order; an error naming what is malformed.
pub fn expand(list: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in split_top(list)? {
        if item.is_empty() {
            return Err(format!("an empty host name in the host list {list:?}"));
        }
        out.extend(expand_one(item, list)?);
    }
    Ok(out)
}

/// Splits at commas outside brackets.
fn split_top(list: &str) -> Result<Vec<&str>, String> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for (i, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(list[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(format!("unbalanced brackets in the host list {list:?}"));
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced brackets in the host list {list:?}"));
    }
    out.push(list[start..].trim());
    Ok(out)
}

fn expand_one(item: &str, list: &str) -> Result<Vec<String>, String> {
    let Some(open) = item.find('[') else {
        return Ok(vec![item.to_string()]);
    };
    let close = open
        + item[open..]
            .find(']')
            .ok_or_else(|| format!("unbalanced brackets in the host list {list:?}"))?;
    let (prefix, ranges, rest) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
    let tails = expand_one(rest, list)?;
    let mut out = Vec::new();
    for part in ranges.split(',') {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let bad = || format!("a malformed range {part:?} in the host list {list:?}");
        if lo.is_empty() || !lo.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let (a, b): (u64, u64) = (
            lo.parse().map_err(|_| bad())?,
            hi.parse().map_err(|_| bad())?,
        );
        if b < a || b - a > 100_000 {
            return Err(bad());
        }
        let width = lo.len();
        for n in a..=b {
            for t in &tails {
                out.push(format!("{prefix}{n:0width$}{t}"));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn compressed_lists_expand_in_order_with_padding() {
        assert_eq!(
            expand("node[01-03,07],gpu5").unwrap(),
            ["node01", "node02", "node03", "node07", "gpu5"]
        );
        assert_eq!(
            expand("a[1-2]-b[8-9]").unwrap(),
            ["a1-b8", "a1-b9", "a2-b8", "a2-b9"]
        );
        assert_eq!(expand("solo").unwrap(), ["solo"]);
        assert_eq!(expand("n[9-11]").unwrap(), ["n9", "n10", "n11"]);
    }

    #[test]
    fn malformed_lists_are_errors() {
        for bad in [
            "node[1-3",
            "node]1[",
            "node[3-1]",
            "node[a-b]",
            "a,,b",
            "n[]",
            "n[-2]",
        ] {
            assert!(expand(bad).is_err(), "{bad}");
        }
    }
}
