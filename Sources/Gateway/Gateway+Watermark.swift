import Crypto
import FoundationEssentials
import Store

/// Why a request for a watermarked segment was refused.
public enum WatermarkRefusal: String, Error, Sendable, Equatable {
    /// The path names no watermarked segment of the asset.
    case segmentUnknown = "watermark-segment-unknown"
    /// The tag is not the one the session's playlist names (the other variant, another session's, a
    /// made-up one), or the session is unknown, expired, revoked or of another asset.
    case variantRefused = "watermark-variant-refused"
    /// A variant file asked for by its own name: variants are served only through a session's path.
    case directVariant = "watermark-variant-direct"
    /// This client address was refused too often.
    case rateLimited = "rate-limited"

    /// The status code.
    public var status: Int {
        // An unknown segment is a 403 too: a made-up path is refused like a wrong tag, and nginx's
        // auth_request passes on only a 401 or 403 (anything else it turns into a 500).
        switch self {
        case .segmentUnknown, .variantRefused, .directVariant: 403
        case .rateLimited: 429
        }
    }

    /// The problem's title.
    public var title: String {
        switch self {
        case .segmentUnknown: "Watermarked segment not found"
        case .variantRefused: "Segment variant refused"
        case .directVariant: "Segment variant only per session"
        case .rateLimited: AccessRefusal.rateLimited.title
        }
    }

    /// One sentence for the client.
    public var detail: String {
        switch self {
        case .segmentUnknown: "The path names no watermarked segment of this asset."
        case .variantRefused: "This is not a segment variant this session's playlist names."
        case .directVariant:
            "This segment has per-session variants: fetch it by the path the session's playlist names."
        case .rateLimited: AccessRefusal.rateLimited.detail
        }
    }
}

extension Gateway {
    /// The path per-session playlists name watermarked segments under.
    public static let watermarkPathPrefix = "/v1/wm/"

    /// The watermark summary of asset `id`, nil when it has no watermark.
    public func watermarkSummary(asset id: String) -> WatermarkSummary? {
        servedAsset(id)?.watermark?.summary
    }

    /// `text`, the media playlist `rendition` of `asset`, with each segment URI replaced by the path of
    /// the variant `session` gets: `/v1/wm/{asset}/{session}/{tag}/{neutral path}`.
    func watermarkedPlaylist(_ text: String, asset: ServedAsset, rendition: String, session: String) -> String {
        guard let mark = asset.watermark else { return text }
        let folder = rendition.contains("/") ? String(rendition[...rendition.lastIndex(of: "/")!]) : ""
        let codeword = watermark.codeword(session: session)
        var lines: [String] = []
        for rawLine in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            var line = String(decoding: rawLine, as: UTF8.self)
            let carriageReturn = line.hasSuffix("\r")
            if carriageReturn { line.removeLast() }
            if !line.isEmpty, !line.hasPrefix("#"), let neutral = mark.neutralByA[folder + line],
                let segment = mark.segments[neutral]
            {
                let variant = watermark.variant(codeword: codeword, asset: asset.record.id, segment: segment.index)
                let tag = watermark.tag(
                    session: session, rendition: rendition, segment: segment.index, variant: variant)
                line = "\(Self.watermarkPathPrefix)\(asset.record.id)/\(session)/\(tag)/\(neutral)"
            }
            lines.append(carriageReturn ? line + "\r" : line)
        }
        return lines.joined(separator: "\n")
    }

    /// The variant file behind a session's watermarked segment path, or why it is refused. Refusals are
    /// rate-limited per address; those naming a live session of the asset are audited one record each,
    /// the others counted per minute.
    public func watermarkedSegment(
        asset id: String, session sessionID: String, tag: String, name: String, remote: String
    ) -> Result<(file: ServedFile, variantPath: String), WatermarkRefusal> {
        let now = clock.now()
        guard let mark = servedAsset(id)?.watermark, let segment = mark.segments[name] else {
            return .failure(refuseWatermark(.segmentUnknown, reason: nil, asset: id, session: nil, remote, now))
        }
        let session = sessions.session(sessionID)
        let known = session?.record.assetID == id
        guard known, session?.record.revokedAt == nil else {
            return .failure(
                refuseWatermark(
                    .variantRefused, reason: known ? "session-revoked" : "session-unknown", asset: id,
                    session: known ? sessionID : nil, remote, now))
        }
        let variant = watermark.variant(session: sessionID, asset: id, segment: segment.index)
        let expected = watermark.tagBytes(
            session: sessionID, rendition: segment.rendition, segment: segment.index, variant: variant)
        guard let given = Base64URL.decode(tag), Digest.constantTimeEquals(given, expected) else {
            return .failure(
                refuseWatermark(
                    .variantRefused, reason: "watermark-variant", asset: id, session: sessionID, remote, now))
        }
        watermarkRequests.increment(labelText: "outcome=\"granted\"")
        return .success((segment.file(variant), "\(id)/\(segment.file(variant).name)"))
    }

    /// `directVariant` when `name` is a variant file of a watermarked asset, which is never served by
    /// its own name (counted per minute and address like other refusals without a token).
    public func refusesDirectVariant(asset id: String, name: String, remote: String) -> WatermarkRefusal? {
        guard let mark = servedAsset(id)?.watermark, mark.variantFiles.contains(name) else { return nil }
        return refuseWatermark(.directVariant, reason: nil, asset: id, session: nil, remote, clock.now())
    }

    private func refuseWatermark(
        _ refusal: WatermarkRefusal, reason: String?, asset: String, session: String?, _ remote: String, _ now: Date
    ) -> WatermarkRefusal {
        let client = RefusalLimiter.client(remote)
        guard refusals.allow(client, now: now.timeIntervalSince1970) else {
            audit.count(reason: AccessRefusal.rateLimited.rawValue, remote: client, at: now)
            watermarkRequests.increment(labelText: "outcome=\"\(WatermarkRefusal.rateLimited.rawValue)\"")
            return .rateLimited
        }
        if let session {
            audit.record(
                AuditRecord(
                    at: now, action: "segment", outcome: "refused", reason: reason ?? refusal.rawValue,
                    assetID: asset, sessionID: session, remote: remote))
        } else {
            audit.count(reason: reason.map { "watermark-\($0)" } ?? refusal.rawValue, remote: client, at: now)
        }
        // Outcomes are fixed codes, so the label text needs no escaping.
        watermarkRequests.increment(labelText: "outcome=\"\(refusal.rawValue)\"")
        return refusal
    }
}
