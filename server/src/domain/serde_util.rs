//! Deserializers for input fields, shared by the service's input structs and the API's: lenient where
//! the published schema promises more than serde's defaults accept.

/// Deserializes an optional whole number that may arrive as an integral float (`3.0`): JSON Schema's
/// `integer` includes such numbers, so the API takes them as the document promises. A fraction or a value
/// out of the target's range is refused with a message naming it.
pub fn whole_number<'de, D, T>(deserializer: D) -> std::result::Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<i64>,
{
    use serde::Deserialize as _;
    use serde::de::Error as _;
    let Some(n) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let whole = n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && (-9.0e18..9.0e18).contains(f))
            .map(|f| f as i64)
    });
    let Some(whole) = whole else {
        return Err(D::Error::custom(format!(
            "expected a whole number, got {n}"
        )));
    };
    T::try_from(whole)
        .map(Some)
        .map_err(|_| D::Error::custom(format!("{n} is out of range")))
}

#[cfg(test)]
mod tests {
    #[derive(Debug, serde::Deserialize)]
    struct Input {
        #[serde(default, deserialize_with = "super::whole_number")]
        n: Option<u8>,
    }

    fn parse(json: &str) -> Result<Option<u8>, String> {
        serde_json::from_str::<Input>(json)
            .map(|i| i.n)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn integral_floats_are_whole_numbers_and_fractions_are_refused() {
        assert_eq!(parse(r#"{"n": 3}"#), Ok(Some(3)));
        assert_eq!(parse(r#"{"n": 3.0}"#), Ok(Some(3)));
        assert_eq!(parse(r#"{}"#), Ok(None));
        assert_eq!(parse(r#"{"n": null}"#), Ok(None));
        let fraction = parse(r#"{"n": 2.5}"#).unwrap_err();
        assert!(
            fraction.contains("expected a whole number, got 2.5"),
            "{fraction}"
        );
        let big = parse(r#"{"n": 300}"#).unwrap_err();
        assert!(big.contains("300 is out of range"), "{big}");
    }
}
