import Foundation
import Testing

/// A newer FFmpeg as a third opinion: PyAV (PyPI `av`, which bundles FFmpeg 8, installed into the test
/// venv by `make test`) opens each CMAF track, its init segment and segments concatenated, with the mov
/// demuxer's `decryption_key`, and decodes it. Every video frame's MD5 (its planes' visible bytes, as
/// FFmpeg's framemd5 hashes a rawvideo frame) equals FFmpeg 5.1's framemd5 of the clear source, for
/// `cbcs` H.264 and HEVC and `cenc`; the audio equals PyAV's own decode of the source. A wrong key gives
/// none of the source's video frames.
@Suite(.timeLimit(.minutes(30))) struct PyAVDecryptionTests {
    /// The test venv's Python, when PyAV is installed in it.
    static var python: String? {
        let python = repositoryRoot.appendingPathComponent(".build/venv/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: python),
            let probe = try? run(python, ["-c", "import av"]), probe.status == 0
        else { return nil }
        return python
    }

    /// Decodes argv[1] (with the key argv[2] unless it is "-") and prints JSON: the FFmpeg version, each
    /// video frame's MD5 over its planes' visible rows, each audio frame's MD5 over its samples, and the
    /// error that stopped the decode, if one did.
    static let decoder = #"""
        import av, hashlib, json, sys
        path, key = sys.argv[1], sys.argv[2]
        result = {"ffmpeg": av.ffmpeg_version_info, "video": [], "audio": [], "error": None}
        def video_hash(frame):
            md5 = hashlib.md5()
            size = 2 if any(component.bits > 8 for component in frame.format.components) else 1
            for plane in frame.planes:
                data = memoryview(plane)
                for row in range(plane.height):
                    md5.update(data[row * plane.line_size:row * plane.line_size + plane.width * size])
            return md5.hexdigest()
        def audio_hash(frame):
            md5 = hashlib.md5()
            size = frame.format.bytes
            per_plane = frame.samples * size * (1 if frame.format.is_planar else len(frame.layout.channels))
            for plane in frame.planes:
                md5.update(memoryview(plane)[:per_plane])
            return md5.hexdigest()
        try:
            with av.open(path, options={} if key == "-" else {"decryption_key": key}) as container:
                for frame in container.decode(*container.streams.video, *container.streams.audio):
                    if isinstance(frame, av.VideoFrame):
                        result["video"].append(video_hash(frame))
                    else:
                        result["audio"].append(audio_hash(frame))
        except Exception as error:
            result["error"] = "%s: %s" % (type(error).__name__, error)
        print(json.dumps(result))
        """#

    struct Decoded: Decodable {
        var ffmpeg: String
        var video: [String]
        var audio: [String]
        var error: String?
    }

    static func decode(_ python: String, _ path: String, key: String?) throws -> Decoded {
        let result = try run(python, ["-c", decoder, path, key ?? "-"])
        try #require(result.status == 0, "\(result.stderr)")
        return try JSONDecoder().decode(Decoded.self, from: Data(result.stdout.utf8))
    }

    @Test(arguments: [
        ("clip.mp4", "sample-aes", 300, 470), ("hevc.mp4", "sample-aes", 75, 142), ("clip.mp4", "cenc", 300, 470),
        ("hevc.mp4", "cenc", 75, 142),
    ])
    func pyAVDecryptsEachTrackToTheSourcesFrames(
        _ name: String, _ encryption: String, _ frames: Int, _ audioFrames: Int
    )
        throws
    {
        let python = try #require(Self.python, "no PyAV in .build/venv: `make test` installs it")
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let result = try package(fixture(name), output, ["--container", "fmp4", "--encryption", encryption])
        try #require(result.status == 0, "\(result.stderr)")
        let tracks = FragmentedMP4Tests()
        let video = try tracks.concatenated(output, "video", into: directory.path("video.mp4"))
        let audio = try tracks.concatenated(output, "audio-1", into: directory.path("audio.mp4"))

        // The hashing is FFmpeg's: PyAV's decode of the clear source is framemd5's, frame for frame.
        let reference = try frameHashes(fixture(name))
        try #require(reference.first?.mediaType == "video")
        let source = try Self.decode(python, fixture(name), key: nil)
        #expect(source.ffmpeg.hasPrefix("8."), "PyAV bundles FFmpeg \(source.ffmpeg)")
        #expect(source.error == nil && source.video == reference[0].hashes, "\(source.error ?? "")")

        let decodedVideo = try Self.decode(python, video, key: testKey)
        #expect(decodedVideo.error == nil, "\(decodedVideo.error ?? "")")
        let videoComparison = FrameComparison(decodedVideo.video, reference[0].hashes, offset: 0)
        #expect(videoComparison.decoded == frames && videoComparison.equal == frames, "\(videoComparison)")
        // The packaged track has no edit list, so PyAV decodes the AAC priming frame the source's drops.
        let decodedAudio = try Self.decode(python, audio, key: testKey)
        #expect(decodedAudio.error == nil, "\(decodedAudio.error ?? "")")
        let audioComparison = FrameComparison(decodedAudio.audio, source.audio, offset: -1)
        #expect(
            audioComparison.decoded == audioFrames && audioComparison.equal == audioFrames - 1, "\(audioComparison)")

        // The negative control: another key gives none of the source's frames (or no frames at all).
        let wrong = try Self.decode(python, video, key: "ffeeddccbbaa99887766554433221100")
        #expect(FrameComparison(wrong.video, reference[0].hashes, offset: 0).equal == 0)
        let wrongAudio = try Self.decode(python, audio, key: "ffeeddccbbaa99887766554433221100")
        #expect(FrameComparison(wrongAudio.audio, source.audio, offset: -1).equal == 0)
    }
}
