//! Strings that match a regular expression, for example values of `pattern` fields.

/// A string matching a simple regex (literals, classes, `\d \w \s .`, groups with `|`,
/// quantifiers), or `None` for what this tiny generator does not understand.
#[cfg(test)]
fn sample_for_pattern(pattern: &str, seed: usize) -> Option<String> {
    sample_for_pattern_reps(pattern, seed, 1)
}

/// `reps`: how many times `+`/`*`/`{n,}` repeat.
pub(super) fn sample_for_pattern_reps(pattern: &str, seed: usize, reps: usize) -> Option<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut pos = 0;
    let g = Gen { seed, reps };
    let out = g.alternation(&chars, &mut pos)?;
    (pos == chars.len()).then_some(out)
}

struct Gen {
    seed: usize,
    reps: usize,
}

impl Gen {
    fn alternation(&self, c: &[char], pos: &mut usize) -> Option<String> {
        let first = self.sequence(c, pos)?;
        while *pos < c.len() && c[*pos] == '|' {
            *pos += 1;
            self.sequence(c, pos)?;
        }
        Some(first)
    }

    fn sequence(&self, c: &[char], pos: &mut usize) -> Option<String> {
        let seed = self.seed;
        let mut out = String::new();
        while *pos < c.len() {
            let ch = c[*pos];
            if ch == '|' || ch == ')' {
                break;
            }
            let atom: String = match ch {
                '^' | '$' => {
                    *pos += 1;
                    continue;
                }
                '(' => {
                    *pos += 1;
                    if c.get(*pos) == Some(&'?') {
                        if c.get(*pos + 1) == Some(&':') {
                            *pos += 2;
                        } else {
                            return None;
                        }
                    }
                    let inner = self.alternation(c, pos)?;
                    if c.get(*pos) != Some(&')') {
                        return None;
                    }
                    *pos += 1;
                    inner
                }
                '[' => {
                    *pos += 1;
                    let negated = c.get(*pos) == Some(&'^');
                    if negated {
                        *pos += 1;
                    }
                    let mut members: Vec<(char, char)> = Vec::new();
                    let mut first = true;
                    while *pos < c.len() && (c[*pos] != ']' || first) {
                        first = false;
                        let mut a = c[*pos];
                        *pos += 1;
                        if a == '\\' {
                            let e = *c.get(*pos)?;
                            *pos += 1;
                            match e {
                                'd' => {
                                    members.push(('0', '9'));
                                    continue;
                                }
                                'w' => {
                                    members.push(('a', 'z'));
                                    members.push(('A', 'Z'));
                                    members.push(('0', '9'));
                                    members.push(('_', '_'));
                                    continue;
                                }
                                's' => {
                                    members.push((' ', ' '));
                                    continue;
                                }
                                _ => a = e,
                            }
                        }
                        if c.get(*pos) == Some(&'-') && c.get(*pos + 1).is_some_and(|x| *x != ']') {
                            let mut b = c[*pos + 1];
                            *pos += 2;
                            if b == '\\' {
                                b = *c.get(*pos)?;
                                *pos += 1;
                            }
                            members.push((a, b));
                        } else {
                            members.push((a, a));
                        }
                    }
                    if c.get(*pos) != Some(&']') {
                        return None;
                    }
                    *pos += 1;
                    let inside = |x: char| members.iter().any(|(a, b)| *a <= x && x <= *b);
                    let pick = if negated {
                        ('a'..='z').chain('0'..='9').find(|x| !inside(*x))?
                    } else {
                        let (a, b) = *members.first()?;
                        let span = (b as u32).saturating_sub(a as u32) + 1;
                        char::from_u32(a as u32 + (seed as u32 % span)).unwrap_or(a)
                    };
                    pick.to_string()
                }
                '\\' => {
                    *pos += 1;
                    let e = *c.get(*pos)?;
                    *pos += 1;
                    match e {
                        'd' => char::from_digit((seed % 10) as u32, 10)?.to_string(),
                        'w' => "a".into(),
                        's' => " ".into(),
                        'D' | 'W' | 'S' | 'b' | 'B' => return None,
                        x if x.is_ascii_alphanumeric() => return None,
                        x => x.to_string(),
                    }
                }
                '.' => {
                    *pos += 1;
                    "a".into()
                }
                '*' | '+' | '?' | '{' => return None,
                other => {
                    *pos += 1;
                    other.to_string()
                }
            };
            // Quantifier.
            let (min, _max) = match c.get(*pos) {
                Some('*') => {
                    *pos += 1;
                    (0, None)
                }
                Some('+') => {
                    *pos += 1;
                    (1, None)
                }
                Some('?') => {
                    *pos += 1;
                    (0, Some(1))
                }
                Some('{') => {
                    let close = c[*pos..].iter().position(|x| *x == '}')? + *pos;
                    let body: String = c[*pos + 1..close].iter().collect();
                    *pos = close + 1;
                    let (a, b) = match body.split_once(',') {
                        Some((a, b)) => (a.trim().parse::<usize>().ok()?, b.trim().parse::<usize>().ok()),
                        None => {
                            let n = body.trim().parse::<usize>().ok()?;
                            (n, Some(n))
                        }
                    };
                    (a, b)
                }
                _ => (1, Some(1)),
            };
            if matches!(c.get(*pos), Some('?') | Some('+')) {
                *pos += 1; // lazy / possessive
            }
            // Open quantifiers repeat `reps` times (at least once for a readable sample).
            let times = match _max {
                None => min.max(self.reps),
                Some(_) => min,
            };
            for _ in 0..times {
                out.push_str(&atom);
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_generator() {
        assert_eq!(sample_for_pattern("^[A-Z]{2,3}$", 0).as_deref(), Some("AA"));
        assert_eq!(sample_for_pattern("^\\d{3}-\\d{2}$", 0).as_deref(), Some("000-00"));
        assert_eq!(sample_for_pattern("^(foo|bar)+$", 0).as_deref(), Some("foo"));
        assert_eq!(sample_for_pattern("^[^0-9]x?$", 0).as_deref(), Some("a"));
        assert_eq!(sample_for_pattern("a\\.b", 0).as_deref(), Some("a.b"));
        assert_eq!(sample_for_pattern("^(?=x)", 0), None);
        assert_eq!(sample_for_pattern("\\p{L}", 0), None);
    }
}
