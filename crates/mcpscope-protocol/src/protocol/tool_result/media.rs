//! What the bytes of a content block are: base64 as servers really send it,
//! the MIME type declared against the one the bytes show, and a file
//! extension to save them under.

use super::*;

/// Strict standard base64 first; then, leniently, without a `data:` URL prefix, whitespace,
/// padding or with the URL-safe alphabet (the second value then says what was wrong).
pub(super) fn decode_base64(data: &str) -> (Result<Vec<u8>, String>, Option<String>) {
    let strict_err = match STANDARD.decode(data) {
        Ok(bytes) => return (Ok(bytes), None),
        Err(e) => e,
    };
    let mut fixes = Vec::new();
    let mut body = data;
    if let Some(rest) = data.strip_prefix("data:")
        && let Some((_, payload)) = rest.split_once(";base64,")
    {
        body = payload;
        fixes.push("has a data: URL prefix");
    }
    let compact: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if compact.len() != body.len() {
        fixes.push("contains whitespace");
    }
    const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    const LENIENT_STANDARD: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT);
    const LENIENT_URL_SAFE: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT);
    let lenient = LENIENT_STANDARD.decode(&compact).or_else(|_| {
        LENIENT_URL_SAFE
            .decode(&compact)
            .inspect(|_| fixes.push("uses the URL-safe alphabet"))
    });
    match lenient {
        Ok(bytes) => {
            if fixes.is_empty() {
                fixes.push("has non-canonical padding");
            }
            let note = format!("is not plain base64 ({}); decoded leniently", fixes.join(", "));
            (Ok(bytes), Some(note))
        }
        Err(_) => (Err(format!("not valid base64: {strict_err}")), None),
    }
}

pub(super) fn check_bytes_against_mime(bytes: &[u8], declared: Option<&str>, ctx: &str, problems: &mut Vec<String>) {
    let Some(sniffed) = sniff_mime(bytes) else {
        return;
    };
    let Some(declared) = declared.filter(|d| !d.trim().is_empty()) else {
        return;
    };
    let essence = mime_essence(declared);
    if matches!(essence.as_str(), "application/octet-stream" | "binary/octet-stream") {
        return;
    }
    if canonical_mime(&essence) != canonical_mime(sniffed) {
        problems.push(format!(
            "{ctx}: mimeType is {declared:?} but the data looks like {sniffed}"
        ));
    }
}

/// `type/subtype` in lower case, without parameters.
pub(super) fn mime_essence(mime: &str) -> String {
    mime.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

/// Folds common aliases so that e.g. `audio/mp3` and `audio/mpeg` compare equal.
pub(super) fn canonical_mime(essence: &str) -> &str {
    match essence {
        "image/jpg" | "image/pjpeg" => "image/jpeg",
        "image/apng" => "image/png",
        "audio/mp3" | "audio/mpeg3" | "audio/x-mpeg-3" | "audio/x-mp3" | "audio/x-mpeg" => "audio/mpeg",
        "audio/x-wav" | "audio/wave" | "audio/vnd.wave" | "audio/x-pn-wav" => "audio/wav",
        "audio/x-flac" => "audio/flac",
        "audio/opus" | "audio/vorbis" | "audio/x-ogg" | "application/ogg" | "video/ogg" => "audio/ogg",
        "audio/x-aac" | "audio/aacp" => "audio/aac",
        "application/x-pdf" => "application/pdf",
        other => other,
    }
}

/// The media type that the magic number at the start of `bytes` indicates: PNG, JPEG, GIF, WebP,
/// WAV, MP3 (ID3 tag or MPEG audio frame sync), AAC (ADTS), Ogg, FLAC, PDF.
pub fn sniff_mime(bytes: &[u8]) -> Option<&'static str> {
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    let riff = |form: &[u8]| bytes.len() >= 12 && starts(b"RIFF") && bytes.get(8..12) == Some(form);
    if starts(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if starts(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        Some("image/gif")
    } else if riff(b"WEBP") {
        Some("image/webp")
    } else if riff(b"WAVE") {
        Some("audio/wav")
    } else if starts(b"OggS") {
        Some("audio/ogg")
    } else if starts(b"fLaC") {
        Some("audio/flac")
    } else if starts(b"%PDF-") {
        Some("application/pdf")
    } else if starts(b"ID3") {
        Some("audio/mpeg")
    } else if let [0xFF, b1, b2, ..] = *bytes {
        let sync = b1 & 0xE0 == 0xE0;
        let version = (b1 >> 3) & 0b11; // 01 is reserved
        let layer = (b1 >> 1) & 0b11; // 00 is reserved for MPEG audio, used by ADTS
        let bitrate = b2 >> 4;
        let rate = (b2 >> 2) & 0b11;
        if b1 & 0xF6 == 0xF0 && (b2 >> 2) & 0x0F < 13 {
            Some("audio/aac")
        } else if sync && version != 0b01 && layer != 0 && bitrate != 0x0F && rate != 0b11 {
            Some("audio/mpeg")
        } else {
            None
        }
    } else {
        None
    }
}

/// A file extension (without the dot) for saving a payload of the given media type; `"bin"` when
/// unknown (`"txt"` for unknown `text/*`). Parameters and case are ignored.
pub fn file_extension(mime: &str) -> &'static str {
    let essence = mime_essence(mime);
    match canonical_mime(&essence) {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "image/bmp" | "image/x-ms-bmp" => "bmp",
        "image/x-icon" | "image/vnd.microsoft.icon" => "ico",
        "image/tiff" => "tiff",
        "image/avif" => "avif",
        "image/heic" => "heic",
        "audio/wav" => "wav",
        "audio/mpeg" => "mp3",
        "audio/ogg" => "ogg",
        "audio/flac" => "flac",
        "audio/aac" => "aac",
        "audio/mp4" | "audio/x-m4a" | "audio/m4a" => "m4a",
        "audio/webm" => "weba",
        "audio/midi" | "audio/x-midi" => "mid",
        "video/mp4" => "mp4",
        "video/webm" => "webm",
        "video/quicktime" => "mov",
        "application/pdf" => "pdf",
        "application/json" => "json",
        "application/xml" | "text/xml" => "xml",
        "application/zip" => "zip",
        "application/gzip" | "application/x-gzip" => "gz",
        "application/x-tar" => "tar",
        "application/wasm" => "wasm",
        "application/javascript" | "text/javascript" => "js",
        "application/yaml" | "application/x-yaml" | "text/yaml" | "text/x-yaml" => "yaml",
        "application/toml" => "toml",
        "application/sql" => "sql",
        "text/plain" => "txt",
        "text/markdown" | "text/x-markdown" => "md",
        "text/html" => "html",
        "text/css" => "css",
        "text/csv" => "csv",
        "text/x-rust" => "rs",
        "text/x-python" | "text/x-script.python" => "py",
        "text/x-typescript" | "application/typescript" => "ts",
        e if e.ends_with("+json") => "json",
        e if e.ends_with("+xml") => "xml",
        e if e.starts_with("text/") => "txt",
        _ => "bin",
    }
}
