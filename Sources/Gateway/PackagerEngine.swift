import Crypto
import Packager

/// The packager (`PackagingJob`) run in process by packaging jobs: the job's container, encryption, key
/// period, watermark (its pattern key drawn by the packager and written to the output's
/// `watermark.json`, which the catalog reads when it serves the asset, as for an imported one) and
/// segment duration, the job's own key and key ID for the first key period, no key file (the keys live
/// wrapped in the store), and key URIs that name the gateway's key endpoint. The packager builds the output beside its target and renames it into
/// place, and removes what it wrote when it fails or is cancelled.
public struct PackagerEngine: PackagingEngine {
    /// The packager with its defaults (6-second segments).
    public init() {}

    public func package(
        _ work: PackagingWork, progress: @escaping @Sendable (Double) -> Void,
        isCancelled: @escaping @Sendable () -> Bool
    ) throws(PackagingFailure) -> PackagingOutcome {
        guard let keyID = [UInt8](hex: work.kid), keyID.count == 16 else {
            throw PackagingFailure("the key ID \(work.kid) is not 32 hex digits")
        }
        var options = PackagingOptions(input: work.input, output: work.outputDirectory)
        options.key = work.key
        options.keyID = keyID
        options.keyFile = nil
        options.keyURITemplate = work.options.keyPeriod == nil ? work.keyURI : work.keyURITemplate
        let watermark = work.options.watermark.flatMap(WatermarkScheme.init(rawValue:))
        guard let encryption = EncryptionMode(rawValue: work.options.encryption),
            let container = ContainerFormat(rawValue: work.options.container),
            (watermark == nil) == (work.options.watermark == nil)
        else {
            throw PackagingFailure("the job asks for \(work.options.stored), which this packager does not know")
        }
        options.encryption = encryption
        options.container = container
        options.containerIsDefault = work.options.containerIsDefault
        options.keyPeriod = work.options.keyPeriod
        options.watermark = watermark
        if let seconds = work.options.segmentDuration { options.segmentDuration = seconds }
        let cancellation = PackagingCancellation()
        if isCancelled() { throw PackagingFailure("packaging was cancelled", cancelled: true) }
        do {
            // Progress comes every half percent of the input, so cancellation is noticed as quickly.
            let result = try PackagingJob(options: options).run(
                progress: { report in
                    progress(report.fraction)
                    if isCancelled() { cancellation.cancel() }
                }, cancellation: cancellation)
            return PackagingOutcome(
                keys: result.periodKeys.map { PackagedKey(kid: $0.keyID.hexString, key: $0.key) },
                container: result.container.rawValue)
        } catch {
            throw PackagingFailure(error.message, cancelled: error.kind == .cancelled)
        }
    }
}
