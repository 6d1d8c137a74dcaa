import FoundationEssentials
import MediaFormats

/// The gateway's own web player: a page and its stylesheet and JavaScript modules, written in
/// `web/player/` and embedded by `scripts/embed-web-player.sh`. No third-party code: MSE takes the
/// CMAF segments as they are, and EME's Clear Key system decrypts them with keys from
/// `/v1/licenses/clearkey`.
enum WebPlayerAssets {
    /// The path the page's files are served under.
    static let pathPrefix = "/v1/web-player/"

    /// What the page may load: its own scripts and styles, media from the gateway and from the
    /// MediaSource's `blob:` URL, and requests to the gateway only. No inline script or style, no frames,
    /// no forms, no plugins.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; media-src 'self' blob:; "
        + "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// The text of the embedded file `name`, exactly as it is in `web/player/`, or nil.
    static func file(_ name: String) -> String? {
        // A multi-line literal drops the line break before its closing delimiter: the files end in one.
        files[name].map { $0 + "\n" }
    }

    /// The media type of the file `name`.
    static func contentType(_ name: String) -> String {
        if name.hasSuffix(".js") { return "text/javascript; charset=utf-8" }
        if name.hasSuffix(".css") { return "text/css; charset=utf-8" }
        return "text/html; charset=utf-8"
    }

    /// The page for `session` playing `asset` from its master playlist at `masterPath`; the values go
    /// into the page's data attributes, escaped, and the session token stays in the page's own URL.
    static func page(session: String, masterPath: String) -> String {
        var text = file("player.html") ?? ""
        let values = [
            "{{session}}": session, "{{master}}": masterPath, "{{events}}": "/v1/sessions/\(session)/events",
            "{{license}}": "/v1/licenses/clearkey",
        ]
        for (placeholder, value) in values {
            text = text.replacing(placeholder, with: MarkupElement.escaped(value))
        }
        return text
    }
}
