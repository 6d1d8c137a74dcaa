import Foundation
import HTTPTestSupport
import ProcessTestSupport
import Testing

/// The files in deploy/: the systemd unit, the example configuration, and the nginx front, each
/// checked by the tool that will read it, and nginx once for real on loopback.
@Suite(.serialized, .timeLimit(.minutes(30))) struct DeployTests {
    static let deploy = repositoryRoot.appendingPathComponent("deploy")

    @Test func theExampleConfigurationIsAccepted() throws {
        let result = try guardPlay([
            "serve", "--config", Self.deploy.appendingPathComponent("guardplay.conf").path, "--check-config",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("listen 127.0.0.1:8080, data /var/lib/guardplay"))
        #expect(result.stdout.contains(", watermark key /var/lib/guardplay/watermark-key (created on start), kek "))
    }

    @Test func theSystemdUnitVerifiesAndRunsTheConfigurationCheck() throws {
        let directory = try TemporaryDirectory()
        var unit = try String(contentsOf: Self.deploy.appendingPathComponent("guardplay.service"), encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/local/bin/guard-play serve --config /etc/guardplay/guardplay.conf\n"))
        #expect(unit.contains("KillSignal=SIGTERM\n"))
        unit = unit.replacingOccurrences(of: "/usr/local/bin/guard-play", with: guardPlayBinary)
        let path = directory.path("guardplay.service")
        try unit.write(toFile: path, atomically: true, encoding: .utf8)
        let verify = try run("/usr/bin/systemd-analyze", ["verify", path])
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(!verify.stderr.contains("guardplay.service:"), "\(verify.stderr)")
    }

    /// The template unit for several nodes: one configuration per instance, the sandbox of the single
    /// unit, verified by systemd as an instance.
    @Test func theNodeTemplateUnitVerifiesAsAnInstanceWithTheSameSandbox() throws {
        let template = try String(contentsOf: Self.deploy.appendingPathComponent("guardplay@.service"), encoding: .utf8)
        let single = try String(contentsOf: Self.deploy.appendingPathComponent("guardplay.service"), encoding: .utf8)
        #expect(template.contains("\nExecStart=/usr/local/bin/guard-play serve --config /etc/guardplay/%i.conf\n"))
        #expect(template.contains("\nUser=guardplay\n") && template.contains("\nDynamicUser=yes\n"))
        // Every sandbox line of the single unit is in the template too.
        let directives = single.split(separator: "\n").filter {
            !$0.hasPrefix("#") && $0.contains("=") && !$0.hasPrefix("ExecStart") && !$0.hasPrefix("Description")
                && !$0.hasPrefix("After")
        }
        for directive in directives { #expect(template.contains("\n\(directive)\n"), "\(directive)") }

        let directory = try TemporaryDirectory()
        let path = directory.path("guardplay@node1.service")
        try template.replacingOccurrences(of: "/usr/local/bin/guard-play", with: guardPlayBinary).write(
            toFile: path, atomically: true, encoding: .utf8)
        let verify = try run("/usr/bin/systemd-analyze", ["verify", path])
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(!verify.stderr.contains("guardplay@node1.service:"), "\(verify.stderr)")
        let (exposure, analysis) = try Self.exposure(path, named: "guardplay@node1.service")
        #expect(exposure < 2.0, "\(analysis)")
    }

    /// The overall exposure `systemd-analyze security` rates the unit file at `path` with, and its report.
    static func exposure(_ path: String, named name: String) throws -> (Double, String) {
        let analysis = try run("/usr/bin/systemd-analyze", ["security", "--offline=yes", "--no-pager", path])
        let prefix = "Overall exposure level for \(name): "
        let line = try #require(
            analysis.stdout.split(separator: "\n").first { $0.contains(prefix) }, "\(analysis.stdout)\(analysis.stderr)"
        )
        let exposure = try #require(Double(line.components(separatedBy: prefix)[1].prefix { $0 != " " }), "\(line)")
        return (exposure, analysis.stdout)
    }

    /// The unit's sandbox, as `systemd-analyze security` rates it (5.6 MEDIUM before), and its KEK
    /// credential, which the example configuration leaves the gateway to find.
    @Test func theSystemdUnitIsSandboxedAndPassesTheKEKAsACredential() throws {
        let unit = Self.deploy.appendingPathComponent("guardplay.service").path
        let (exposure, analysis) = try Self.exposure(unit, named: "guardplay.service")
        #expect(exposure < 2.0, "\(analysis)")
        let text = try String(contentsOfFile: unit, encoding: .utf8)
        for directive in [
            "CapabilityBoundingSet=\n", "SystemCallFilter=@system-service\n", "SystemCallFilter=~@privileged\n",
            "ProtectClock=yes\n", "ProtectKernelLogs=yes\n", "ProtectProc=invisible\n", "PrivateUsers=yes\n",
            "IPAddressDeny=any\n", "IPAddressAllow=localhost\n", "LoadCredential=kek:/etc/guardplay/kek\n",
        ] {
            #expect(text.contains("\n" + directive), "\(directive)")
        }
        // What systemd hands the service for that line: $CREDENTIALS_DIRECTORY/kek, root's, mode 0440
        // (0400 and an ACL for the service's user); the example configuration takes it from there.
        let credentials = try TemporaryDirectory()
        let kek = credentials.path("kek")
        try (String(repeating: "0123456789abcdef", count: 4) + "\n").write(
            toFile: kek, atomically: true, encoding: .utf8)
        try #require(chown(kek, 0, 0) == 0 && chmod(kek, 0o440) == 0)
        let checked = try guardPlay(
            ["serve", "--config", Self.deploy.appendingPathComponent("guardplay.conf").path, "--check-config"],
            environment: ["CREDENTIALS_DIRECTORY": credentials.url.path])
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(checked.stdout.contains(", kek \(kek)\n"), "\(checked.stdout)")
    }

    /// No systemd runs these tests (it is not PID 1 here), so the unit's SystemCallFilter= and
    /// MemoryDenyWriteExecute= are checked against the gateway itself: as an unprivileged user with
    /// no capabilities (what DynamicUser= gives it), traced by strace through keys, playback, a
    /// packaging job and a drain, it makes only system calls the unit's filter lines allow and never
    /// maps memory both writable and executable.
    @Test func theGatewayMakesOnlySystemCallsTheUnitAllows() throws {
        let nobody: uid_t = 65534
        let traces = try TemporaryDirectory()
        try #require(chown(traces.url.path, nobody, nobody) == 0, "chown needs root")
        let trace = traces.path("trace")
        let server = try GatewayServer(launcher: ["/usr/bin/strace", "-f", "-qq", "-o", trace], user: nobody)
        let (admin, clip, _, token) = try server.servingClip()
        #expect(try server.call("GET", "/v1/keys/\(clip.kid)?token=\(token)").body == clip.key)
        #expect(try server.call("GET", "/v1/hls/clip/master.m3u8?token=\(token)").status == 200)
        #expect(try server.call("GET", "/v1/hls/clip/seg0.ts").status == 200)
        try FileManager.default.copyItem(atPath: fixture("clip.mp4"), toPath: server.inputRoot + "/in.mp4")
        let job = try server.submitJob(token: admin, input: "in.mp4", asset: "packaged")
        let finished = try server.pollJob(job, token: admin) {
            ["succeeded", "failed"].contains($0["state"] as? String)
        }
        #expect(finished?["state"] as? String == "succeeded", "\(String(describing: finished))")
        // strace holds SIGTERM back from itself; the gateway, in its process group, drains and exits.
        let tracer = try #require(server.process?.pid)
        kill(-tracer, SIGTERM)
        #expect(server.waitForExit() == 0, "\(server.log)")
        var owner = stat()
        #expect(stat(server.database, &owner) == 0 && owner.st_uid == nobody)

        let unit = try String(
            contentsOf: Self.deploy.appendingPathComponent("guardplay.service"), encoding: .utf8)
        let filters = unit.split(separator: "\n").filter { $0.hasPrefix("SystemCallFilter=") }
            .map { $0.dropFirst("SystemCallFilter=".count) }
        try #require(filters.first?.hasPrefix("~") == false, "the unit's first filter line must allow")
        let sets = try Self.systemCallSets()
        func expand(_ names: some StringProtocol) -> Set<String> {
            Set(names.split(separator: " ").flatMap { Self.expand(String($0), in: sets) })
        }
        var allowed = Set<String>()
        for filter in filters {
            if filter.hasPrefix("~") {
                allowed.subtract(expand(filter.dropFirst()))
            } else {
                allowed.formUnion(expand(filter))
            }
        }
        let lines = fileText(trace).split(separator: "\n")
        let made = Set(
            lines.compactMap { line -> String? in
                // "PID name(arguments) = result"; resumed calls ("<... name resumed>") were counted at their start.
                let call = line.drop { $0 != " " }.drop { $0 == " " }
                let name = call.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                return call.dropFirst(name.count).first == "(" ? String(name) : nil
            })
        #expect(made.isSuperset(of: ["accept4", "epoll_wait", "openat", "pwrite64"]), "\(made.sorted())")
        #expect(
            made.subtracting(allowed).isEmpty, "calls the unit's filter kills: \(made.subtracting(allowed).sorted())")
        let writableExecutable = lines.filter {
            ($0.contains("mmap(") || $0.contains("mprotect(")) && $0.contains("PROT_WRITE") && $0.contains("PROT_EXEC")
        }
        #expect(writableExecutable.isEmpty, "\(writableExecutable)")
    }

    /// systemd's named sets of system calls (`@system-service` and the rest), as `systemd-analyze
    /// syscall-filter` lists them: a set's members are calls and other sets.
    static func systemCallSets() throws -> [String: [String]] {
        let listed = try run("/usr/bin/systemd-analyze", ["syscall-filter", "--no-pager"])
        try #require(listed.status == 0, "\(listed.stderr)")
        var sets: [String: [String]] = [:]
        var current: String?
        for line in listed.stdout.split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty || text.hasPrefix("#") { continue }
            if !line.hasPrefix(" ") && text.hasPrefix("@") {
                current = text
                sets[text] = []
            } else if let current, let name = text.split(separator: " ").first {
                sets[current, default: []].append(String(name))
            }
        }
        return sets
    }

    /// `name` with every set in it expanded to its system calls.
    static func expand(_ name: String, in sets: [String: [String]]) -> Set<String> {
        guard name.hasPrefix("@") else { return [name] }
        return Set((sets[name] ?? []).flatMap { expand($0, in: sets) })
    }

    @Test func nginxAcceptsTheFrontConfigurationAndCachesSegmentsButNeverKeys() throws {
        let server = try GatewayServer()
        let admin = try server.token("admin")
        let clip = try makeAESHLS(in: server.importRoot, name: "clip")
        try server.importAsset(clip, id: "clip", token: admin)
        let (_, token) = try server.session("clip", token: admin)
        let nginx = try NginxFront(upstreamPort: server.port)
        #expect(nginx.syntaxCheck.status == 0, "\(nginx.syntaxCheck.stderr)")
        #expect(nginx.syntaxCheck.stderr.contains("syntax is ok"))
        try nginx.start()
        defer { nginx.stop() }

        let master = try nginx.get("/v1/hls/clip/master.m3u8?token=\(token)")
        #expect(master.status == 200 && master.text.contains("media.m3u8?token=\(token)"))
        #expect(master.header("X-Cache-Status") == nil)
        let first = try nginx.get("/v1/hls/clip/seg1.ts")
        let second = try nginx.get("/v1/hls/clip/seg1.ts?token=ignored")
        #expect(first.status == 200 && first.header("X-Cache-Status") == "MISS")
        #expect(second.status == 200 && second.header("X-Cache-Status") == "HIT" && second.body == first.body)
        let ranged = try nginx.get("/v1/hls/clip/seg1.ts", headers: ["Range: bytes=0-187"])
        #expect(ranged.status == 206 && ranged.body == Array(first.body.prefix(188)))

        let grantsBefore = try keyGrants(server)
        for _ in 0..<3 {
            let key = try nginx.get("/v1/keys/\(clip.kid)?token=\(token)")
            #expect(key.status == 200 && key.body == clip.key)
            #expect(key.header("Cache-Control") == "no-store")
            #expect(key.header("X-Cache-Status") == nil)
        }
        #expect(try keyGrants(server) == grantsBefore + 3, "a key was served from a cache")
        #expect(try nginx.get("/v1/keys/\(clip.kid)").status == 401)
        #expect(try nginx.get("/metrics").status == 404)

        // FFmpeg plays the stream through nginx over TLS; every segment is then in nginx's cache.
        let played = try run(
            "/usr/bin/ffmpeg",
            [
                "-nostdin", "-loglevel", "error", "-i", nginx.url("/v1/hls/clip/master.m3u8?token=\(token)"), "-f",
                "null", "-",
            ])
        #expect(played.status == 0, "\(played.stderr)")
        #expect(try nginx.get("/v1/hls/clip/seg0.ts").header("X-Cache-Status") == "HIT")
    }

    /// A watermarked asset behind nginx: each session gets its own variants through its own paths, any
    /// other path is refused 403 by the gateway's auth_request, and the cache keeps each variant file
    /// once, so a second session given the same variant of a segment is served it from the cache.
    @Test func nginxServesEachSessionItsOwnWatermarkVariantsAndCachesEachVariantOnce() throws {
        let server = try GatewayServer()
        let admin = try server.token("admin")
        let asset = try makeAESHLS(in: server.importRoot, name: "marked")
        let segments = try #require(try makeABWatermarked(asset.directory, playlists: ["media.m3u8"])["media.m3u8"])
        try server.importAsset(asset, id: "marked", token: admin)
        // The watermarking key was made like the KEK: a 0600 file under --data.
        var info = stat()
        #expect(stat(server.dataDirectory + "/watermark-key", &info) == 0 && info.st_mode & 0o777 == 0o600)
        let summary = try #require(
            try server.call("GET", "/v1/assets/marked", token: admin).json?["watermark"] as? [String: Any])
        let seconds = try #require(summary["segmentSeconds"] as? Double)
        #expect(summary["codewordBits"] as? Int == 64 && seconds > 1 && seconds < 3)
        #expect(summary["identifiesAfterSeconds"] as? Double == 64 * seconds)
        let nginx = try NginxFront(upstreamPort: server.port)
        #expect(nginx.syntaxCheck.status == 0, "\(nginx.syntaxCheck.stderr)")
        try nginx.start()
        defer { nginx.stop() }

        let files = try segments.map { segment in
            try [segment.a, segment.b].map {
                try [UInt8](Data(contentsOf: URL(fileURLWithPath: asset.directory + "/" + $0)))
            }
        }
        var served: [[Bool]] = []  // per session, per segment: true for variant B
        var paths: [[String]] = []
        for round in 0..<2 {
            let (_, token) = try server.session("marked", token: admin)
            let playlist = try nginx.get("/v1/hls/marked/media.m3u8?token=\(token)")
            #expect(playlist.status == 200)
            let uris = playlist.text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(
                String.init)
            #expect(uris.count == segments.count && uris.allSatisfy { $0.hasPrefix("/v1/wm/marked/") }, "\(uris)")
            var variants: [Bool] = []
            for (index, uri) in uris.enumerated() {
                let response = try nginx.get(uri)
                #expect(response.status == 200, "\(uri): \(response.text)")
                #expect(response.body == files[index][0] || response.body == files[index][1])
                let isB = response.body == files[index][1]
                // The first session's fetches fill the cache; the second's hit it where it got the same variant.
                let cached = round == 1 && served[0][index] == isB
                #expect(response.header("X-Cache-Status") == (cached ? "HIT" : "MISS"), "\(round) \(index)")
                variants.append(isB)
            }
            served.append(variants)
            paths.append(uris)
            #expect(try nginx.get(uris[0]).header("X-Cache-Status") == "HIT")
        }
        // The first session's ID in the second session's paths: not that session's variants, 403.
        let first = try #require(paths[0][0].split(separator: "/").dropFirst(3).first.map(String.init))
        let second = try #require(paths[1][0].split(separator: "/").dropFirst(3).first.map(String.init))
        for uri in paths[1] {
            let response = try nginx.get(uri.replacingOccurrences(of: "/\(second)/", with: "/\(first)/"))
            #expect(response.status == 403 && response.header("Content-Type") == "application/problem+json")
        }
        let madeUp = try nginx.get("/v1/wm/marked/\(first)/AAAAAAAAAAAAAAAAAAAAAA/seg0.ts")
        #expect(madeUp.status == 403 && madeUp.text.contains("watermark-variant-refused"))
        // Neither variant file by its own name, through the segment location either.
        #expect(try nginx.get("/v1/hls/marked/\(segments[0].a)").status == 403)
        #expect(try nginx.get("/v1/hls/marked/\(segments[0].b)").status == 403)
        // A revoked session's paths are refused though their variants are in the cache.
        #expect(try server.call("DELETE", "/v1/sessions/\(first)", token: admin).status == 204)
        #expect(try nginx.get(paths[0][0]).status == 403)
        #expect(try nginx.get(paths[1][0]).status == 200)
        let metrics = try server.call("GET", "/metrics").text
        #expect(metrics.contains("guardplay_watermark_segment_requests_total{outcome=\"watermark-variant-refused\"}"))
        // With the gateway gone no path can be checked, cached or not: 503 with Retry-After, not the 500
        // auth_request makes of a check that fails, and not the cached variant.
        #expect(server.stop() == 0)
        let unchecked = try nginx.get(paths[1][0])
        #expect(unchecked.status == 503, "\(unchecked.status) \(unchecked.text)")
        #expect(unchecked.header("Retry-After") == "1")
        #expect(unchecked.header("Content-Type") == "application/problem+json")
        #expect(unchecked.text.contains("watermark-variant-unchecked"), "\(unchecked.text)")
    }

    @Test func startsNginxOnAnotherPortWhenItsPortIsTakenFirst() throws {
        let server = try GatewayServer()
        let nginx = try NginxFront(upstreamPort: server.port)
        // Another process takes the free port before nginx binds it: it listens, but never answers.
        let squatter = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(squatter) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = nginx.port.bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(squatter, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        try #require(bound && listen(squatter, 16) == 0, "could not take port \(nginx.port)")
        let taken = nginx.port
        try nginx.start()
        defer { nginx.stop() }
        #expect(nginx.port != taken)
        #expect(try nginx.get("/readyz").status == 200)
    }

    /// Session tokens travel in query strings (`?token=`): nginx's logs hold none, not even when
    /// the upstream fails, the one error nginx logs with the whole request line.
    @Test func nginxLogsNoSessionTokenEvenWhenTheUpstreamFails() throws {
        let (server, nginx, (_, clip, _, token)) = try servingClipBehindNginx()
        defer { nginx.stop() }
        #expect(try nginx.get("/v1/hls/clip/master.m3u8?token=\(token)").status == 200)
        #expect(try nginx.get("/v1/keys/\(clip.kid)?token=\(token)").status == 200)
        // Whatever the gateway makes of these, nginx logs neither query.
        _ = try nginx.get("/v1/hls/clip/media.m3u8?x=1&Token=\(token)")
        _ = try nginx.get("/v1/keys/\(clip.kid)?tok%65n=\(token)")
        #expect(try nginx.get("/v1/assets?limit=2").status == 401)
        #expect(server.stop() == 0)
        #expect(try nginx.get("/v1/keys/\(clip.kid)?token=\(token)").status == 502)

        let access = fileText(nginx.accessLog)
        #expect(access.contains("\"GET /v1/keys/\(clip.kid)?token=[redacted] HTTP/1.1\" 200"), "\(access)")
        #expect(access.contains("\"GET /v1/keys/\(clip.kid)?token=[redacted] HTTP/1.1\" 502"), "\(access)")
        #expect(access.contains("\"GET /v1/assets?limit=2 HTTP/1.1\" 401"), "\(access)")
        #expect(access.contains("\"GET /v1/hls/clip/media.m3u8?[query naming a token, not logged] HTTP/1.1\""))
        #expect(access.contains("\"GET /v1/keys/\(clip.kid)?[escaped query, not logged] HTTP/1.1\""))
        #expect(access.split(separator: "\n").filter { !$0.contains("/readyz") }.count == 6, "\(access)")
        for log in [nginx.accessLog, nginx.siteErrorLog, nginx.errorLog, nginx.errorOutput] {
            #expect(!fileText(log).contains(token), "\(log) holds the session token: \(fileText(log).suffix(2000))")
        }
    }

    /// The gateway varies by Origin only when its answer does: one allowed origin is named to every
    /// caller, so a segment is one cache entry whatever Origin says.
    @Test func nginxServesOneCachedSegmentToEveryOrigin() throws {
        let (server, nginx, _) = try servingClipBehindNginx(["--cors-origin", "https://player.example"])
        // The gateway lives until nginx stops.
        defer { withExtendedLifetime(server) { nginx.stop() } }
        let answers = try (0..<10).map {
            try nginx.get("/v1/hls/clip/seg1.ts", headers: ["Origin: https://r\($0).invalid"])
        }
        #expect(answers.map { $0.header("X-Cache-Status") } == ["MISS"] + Array(repeating: "HIT", count: 9))
        for answer in answers {
            #expect(answer.status == 200 && answer.body == answers[0].body)
            #expect(answer.header("Access-Control-Allow-Origin") == "https://player.example")
            #expect(answer.header("Vary") == nil)
        }
        let allowed = try nginx.get("/v1/hls/clip/seg1.ts", headers: ["Origin: https://player.example"])
        #expect(allowed.header("X-Cache-Status") == "HIT")
        #expect(allowed.header("Access-Control-Allow-Origin") == "https://player.example")
    }

    /// Past its burst a client gets 429 with Retry-After from nginx, and the gateway sees none of them.
    @Test func nginxLimitsKeysLicencesAndTheAPIPerClient() throws {
        let (server, nginx, (admin, clip, _, token)) = try servingClipBehindNginx()
        defer { nginx.stop() }
        let grantsBefore = try keyGrants(server)
        let keys = try nginx.limitedStatuses("/v1/keys/\(clip.kid)?token=\(token)", count: 100, burst: 40, rate: 10)
        #expect(try keyGrants(server) == grantsBefore + keys.filter { $0 == 200 }.count)
        // The bucket gains a token every 100 ms, and on a loaded machine one curl run can start later than
        // that after the last: the refusal is looked at among requests sent back to back in one run.
        let refused = try #require(try nginx.firstRefusal("/v1/keys/\(clip.kid)?token=\(token)", count: 20))
        #expect(refused.retryAfter == "1")
        #expect(refused.contentType == "application/problem+json")
        #expect(refused.body.contains(#""status":429"#))
        #expect(refused.strictTransportSecurity == "max-age=63072000")

        _ = try nginx.limitedStatuses(
            "/v1/sessions", count: 40, burst: 20, rate: 5, passing: 201,
            curl: [
                "-X", "POST", "-H", "Authorization: Bearer \(admin)", "-H", "Content-Type: application/json",
                "-d", #"{"asset":"clip"}"#,
            ])
        _ = try nginx.limitedStatuses("/v1/openapi.json", count: 150, burst: 80, rate: 20)
        // Segments come from the cache and are not limited.
        #expect(try nginx.statuses("/v1/hls/clip/seg0.ts", count: 150).allSatisfy { $0 == 200 })
    }

    /// One client holds at most 8 event streams through nginx, whose upstream connections all come
    /// from 127.0.0.1 (where the gateway's per-IP limit is off): the ninth gets 429 at once. The
    /// streams belong to three sessions, so the gateway's own cap (4 a session) never refuses one.
    @Test func nginxCapsEventStreamsPerClient() throws {
        let (server, nginx, (admin, _, session, token)) = try servingClipBehindNginx()
        defer { withExtendedLifetime(server) { nginx.stop() } }
        let target = "/v1/sessions/\(session)/events?token=\(token)"
        let others = try (0..<2).map { _ in try server.session("clip", token: admin) }
        let streams = try (0..<8).map { index in
            let (id, sessionToken) = others[index % 2]
            return try SpawnedProcess(
                [
                    "/usr/bin/curl", "-sN", "--http1.1", "--cacert", nginx.certificate, "-o",
                    nginx.prefix.path("stream\(index)"), nginx.url("/v1/sessions/\(id)/events?token=\(sessionToken)"),
                ], errors: nginx.prefix.path("stream\(index).err"))
        }
        defer { for stream in streams { stream.end(grace: 0) } }
        // Each stream's first event is the capture state; once all eight have it, all are open.
        let open = eventually(timeout: 30) {
            (0..<8).allSatisfy { fileText(nginx.prefix.path("stream\($0)")).contains("capture-state") }
        }
        try #require(open, "the eight streams did not open")
        let ninth = try nginx.get(target, timeout: 10)
        #expect(ninth.status == 429 && ninth.header("Retry-After") == "1", "\(ninth.status)")
        #expect(streams.allSatisfy { $0.isRunning })
        // Other requests from the same client are not held back by its streams.
        #expect(try nginx.get("/v1/hls/clip/master.m3u8?token=\(token)").status == 200)
    }

    /// Mozilla's "intermediate" TLS: forward-secret AEAD suites only, no session tickets, HSTS.
    @Test func nginxOffersOnlyForwardSecretAEADSuitesAndHSTS() throws {
        let server = try GatewayServer()
        let nginx = try NginxFront(upstreamPort: server.port)
        try nginx.start()
        defer { nginx.stop() }
        func handshake(_ options: [String]) throws -> ProcessResult {
            let command = (["/usr/bin/openssl", "s_client", "-connect", "127.0.0.1:\(nginx.port)"] + options)
                .joined(separator: " ")
            return try run("/bin/sh", ["-c", command + " </dev/null"], timeout: 30)
        }
        for cipher in [
            "AES128-SHA", "AES256-GCM-SHA384", "ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA384", "CAMELLIA128-SHA",
            "ECDHE-ARIA128-GCM-SHA256", "DHE-RSA-AES128-GCM-SHA256",
        ] {
            let refused = try handshake(["-tls1_2", "-cipher", cipher])
            #expect(refused.status != 0, "\(cipher) was accepted: \(refused.stdout)")
            #expect(!refused.stdout.contains("Cipher is \(cipher)"))
        }
        for cipher in ["ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305"] {
            let accepted = try handshake(["-tls1_2", "-cipher", cipher])
            #expect(accepted.status == 0, "\(cipher): \(accepted.stderr)")
            #expect(accepted.stdout.contains("Cipher is \(cipher)"), "\(accepted.stdout)")
            #expect(!accepted.stdout.contains("TLS session ticket"), "a session ticket: \(accepted.stdout)")
        }
        let modern = try handshake(["-tls1_3"])
        #expect(modern.status == 0 && modern.stdout.contains("New, TLSv1.3"), "\(modern.stdout)")
        #expect(try handshake(["-tls1_1", "-cipher", "ALL:@SECLEVEL=0"]).status != 0)
        for target in ["/readyz", "/v1/openapi.json", "/v1/hls/clip/seg0.ts", "/metrics"] {
            #expect(try nginx.get(target).header("Strict-Transport-Security") == "max-age=63072000", "\(target)")
        }
    }

    /// A gateway serving the clip (`GatewayServer.servingClip`) with nginx started in front of it.
    func servingClipBehindNginx(_ arguments: [String] = []) throws -> (
        GatewayServer, NginxFront, (admin: String, clip: TestAsset, session: String, token: String)
    ) {
        let server = try GatewayServer(arguments)
        let serving = try server.servingClip()
        let nginx = try NginxFront(upstreamPort: server.port)
        try nginx.start()
        return (server, nginx, serving)
    }

    func keyGrants(_ server: GatewayServer) throws -> Int {
        let metrics = try server.call("GET", "/metrics").text
        let line = metrics.split(separator: "\n").first {
            $0.hasPrefix("guardplay_key_requests_total{outcome=\"granted\"}")
        }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }
}

/// nginx on a loopback port with TLS (a self-signed certificate made with the openssl CLI), running
/// deploy/nginx/guardplay.conf with its addresses and paths pointed into a temporary prefix.
///
/// The port is one that was free a moment before nginx binds it; when another process takes it in
/// between, nginx's error log says so and nginx is started again on another. Every request (the
/// readiness probe too) checks the server's certificate against this test's own, freshly made one,
/// so none can be answered by another listener that happens to hold the port.
final class NginxFront {
    let prefix: TemporaryDirectory
    private(set) var port: UInt16
    /// The gateway nodes nginx's upstream lists, in turn.
    let upstreamPorts: [UInt16]
    var upstreamPort: UInt16 { upstreamPorts[0] }
    var process: SpawnedProcess?
    let syntaxCheck: ProcessResult
    var certificate: String { prefix.path("cert.pem") }
    var errorLog: String { prefix.path("logs/error.log") }
    var errorOutput: String { prefix.path("logs/stderr.log") }
    /// The site's own logs (its access_log and error_log lines).
    var accessLog: String { prefix.path("logs/site-access.log") }
    var siteErrorLog: String { prefix.path("logs/site-error.log") }

    convenience init(upstreamPort: UInt16) throws { try self.init(upstreamPorts: [upstreamPort]) }

    /// nginx over the nodes at `upstreamPorts` on loopback.
    init(upstreamPorts: [UInt16]) throws {
        prefix = try TemporaryDirectory()
        self.upstreamPorts = upstreamPorts
        port = try freePort()
        let root = prefix.url.path
        for name in ["cache", "logs", "temp"] {
            try FileManager.default.createDirectory(atPath: prefix.path(name), withIntermediateDirectories: true)
        }
        let made = try run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
                "subjectAltName=IP:127.0.0.1", "-keyout", prefix.path("key.pem"), "-out", prefix.path("cert.pem"),
            ])
        guard made.status == 0 else { throw RawClientError("openssl: \(made.stderr)") }
        let main = """
            worker_processes 1;
            pid \(root)/nginx.pid;
            error_log \(root)/logs/error.log info;
            events { worker_connections 256; }
            http {
                access_log \(root)/logs/access.log;
                client_body_temp_path \(root)/temp/body;
                proxy_temp_path \(root)/temp/proxy;
                fastcgi_temp_path \(root)/temp/fastcgi;
                uwsgi_temp_path \(root)/temp/uwsgi;
                scgi_temp_path \(root)/temp/scgi;
                include \(root)/guardplay.conf;
            }

            """
        try main.write(toFile: prefix.path("nginx.conf"), atomically: true, encoding: .utf8)
        try Self.writeSite(in: prefix, port: port, upstreamPorts: upstreamPorts)
        // Worker processes run as an unprivileged user when the tests run as root.
        _ = try run("/bin/chmod", ["-R", "a+rwX", root])
        syntaxCheck = try run("/usr/sbin/nginx", ["-t", "-p", root + "/", "-c", prefix.path("nginx.conf")])
    }

    deinit { stop() }

    /// Writes deploy/nginx/guardplay.conf into `prefix`, pointed at `port`, the nodes at
    /// `upstreamPorts` and the prefix's paths; each must be there exactly once.
    private static func writeSite(in prefix: TemporaryDirectory, port: UInt16, upstreamPorts: [UInt16]) throws {
        var site = try String(
            contentsOf: repositoryRoot.appendingPathComponent("deploy/nginx/guardplay.conf"), encoding: .utf8)
        let substitutions = [
            ("server 127.0.0.1:8080;", upstreamPorts.map { "server 127.0.0.1:\($0);" }.joined(separator: "\n    ")),
            ("listen 443 ssl http2;", "listen 127.0.0.1:\(port) ssl http2;"),
            ("/var/cache/nginx/guardplay", prefix.path("cache")),
            ("/etc/ssl/guardplay/fullchain.pem", prefix.path("cert.pem")),
            ("/etc/ssl/guardplay/privkey.pem", prefix.path("key.pem")),
            ("/var/log/nginx/guardplay.access.log", prefix.path("logs/site-access.log")),
            ("/var/log/nginx/guardplay.error.log", prefix.path("logs/site-error.log")),
        ]
        for (from, to) in substitutions {
            guard site.components(separatedBy: from).count == 2 else {
                throw RawClientError("deploy/nginx/guardplay.conf no longer contains '\(from)' exactly once")
            }
            site = site.replacingOccurrences(of: from, with: to)
        }
        try site.write(toFile: prefix.path("guardplay.conf"), atomically: true, encoding: .utf8)
    }

    /// Starts nginx and waits until it answers over TLS with this test's certificate; when its port
    /// was taken in the meantime, starts it again on another (five tries).
    func start() throws {
        for _ in 0..<5 {
            // Fresh logs per try, so only this try's bind failure counts.
            for log in [errorLog, errorOutput] { try Data().write(to: URL(fileURLWithPath: log)) }
            let process = try SpawnedProcess(
                ["/usr/sbin/nginx", "-p", prefix.url.path + "/", "-c", prefix.path("nginx.conf"), "-g", "daemon off;"],
                errors: errorOutput)
            self.process = process
            let bindFailure = "bind() to 127.0.0.1:\(port) failed"
            var taken: Bool { (fileText(errorLog) + fileText(errorOutput)).contains(bindFailure) }
            var ready = false
            _ = eventually(timeout: 30) {
                if taken || !process.isRunning { return true }
                ready = (try? get("/readyz", timeout: 5))?.status == 200
                return ready
            }
            if ready { return }
            process.end(grace: 2)
            guard taken else {
                throw RawClientError(
                    "nginx did not get ready on \(port): \(fileText(errorLog).suffix(2000))"
                        + fileText(errorOutput).suffix(1000))
            }
            port = try freePort()
            try Self.writeSite(in: prefix, port: port, upstreamPorts: upstreamPorts)
        }
        throw RawClientError("nginx found its port taken five times over")
    }

    /// Stops nginx and its worker (SIGTERM to its process group, SIGKILL after 5 s).
    func stop() {
        process?.end(grace: 5)
    }

    func url(_ target: String) -> String { "https://127.0.0.1:\(port)\(target)" }

    /// The statuses of `count` requests for `target` sent back to back on one connection by one curl,
    /// with `curl`'s options (a method, fields, a body) applied to each.
    /// `count` requests for `target` in one curl through a `limit_req` of `burst` with `rate` a second:
    /// the first `burst + 1` pass, some are refused with 429 and nothing else, and no more pass than the
    /// burst and what the rate gave back while the requests ran (a loaded machine sends them slower).
    func limitedStatuses(
        _ target: String, count: Int, burst: Int, rate: Double, passing: Int = 200, curl: [String] = []
    ) throws -> [Int] {
        let start = Date()
        let codes = try statuses(target, count: count, curl: curl)
        let elapsed = Date().timeIntervalSince(start)
        #expect(codes.count == count)
        #expect(codes.prefix(burst + 1).allSatisfy { $0 == passing }, "\(target): \(codes)")
        #expect(codes.allSatisfy { $0 == passing || $0 == 429 }, "\(target): \(codes)")
        #expect(codes.contains(429), "\(target): none refused in \(elapsed) s: \(codes)")
        let bound = burst + 2 + Int((rate * elapsed).rounded(.up))
        #expect(codes.filter { $0 == passing }.count <= bound, "\(target): more than \(bound) passed in \(elapsed) s")
        return codes
    }

    /// The first 429 among `count` GETs of `target` sent back to back by one curl, with the headers the
    /// tests check and its body; nil when none was refused.
    func firstRefusal(_ target: String, count: Int) throws -> (
        retryAfter: String, contentType: String, strictTransportSecurity: String, body: String
    )? {
        let bodies = (0..<count).map { prefix.path("refusal-\(UUID().uuidString)-\($0)") }
        let format = "%{http_code}\t%{content_type}\t%header{retry-after}\t%header{strict-transport-security}\n"
        let written = try curlWriteOut(target, format, bodies.flatMap { ["-o", $0, url(target)] })
        let lines = written.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, line) in lines.enumerated() where index < bodies.count {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 4, fields[0] == "429" else { continue }
            let body = (try? String(contentsOfFile: bodies[index], encoding: .utf8)) ?? ""
            return (fields[2], fields[1], fields[3], body)
        }
        return nil
    }

    func statuses(_ target: String, count: Int, curl: [String] = []) throws -> [Int] {
        let requests = (0..<count).flatMap { _ in ["-o", "/dev/null", url(target)] }
        return try curlWriteOut(target, "%{http_code}\n", curl + requests).split(separator: "\n").compactMap { Int($0) }
    }

    /// What one curl run of `arguments` (its requests over one connection to nginx, trusting this test's
    /// certificate) prints with `--write-out format` after each request.
    private func curlWriteOut(_ target: String, _ format: String, _ arguments: [String]) throws -> String {
        let result = try run(
            "/usr/bin/curl",
            ["-s", "--cacert", certificate, "--max-time", "60", "--http1.1", "-w", format] + arguments,
            timeout: 90)
        guard result.status == 0 else { throw RawClientError("curl \(target): exit \(result.status) \(result.stderr)") }
        return result.stdout
    }

    /// A GET through nginx over TLS with curl, headers and body kept apart; the server must present
    /// this test's certificate.
    func get(_ target: String, headers: [String] = [], timeout: Double = 60) throws -> RawResponse {
        let output = prefix.path("curl-\(UUID().uuidString)")
        let result = try run(
            "/usr/bin/curl",
            [
                "-s", "--cacert", certificate, "--max-time", String(Int(timeout)), "--http1.1", "-D", output + ".head",
                "-o", output + ".body", url(target),
            ] + headers.flatMap { ["-H", $0] }, timeout: timeout + 30)
        guard result.status == 0 else { throw RawClientError("curl \(target): exit \(result.status) \(result.stderr)") }
        let head = try Data(contentsOf: URL(fileURLWithPath: output + ".head"))
        let body = try Data(contentsOf: URL(fileURLWithPath: output + ".body"))
        var response = Array(head)
        if let length = RawResponse(response).header("Content-Length"), Int(length) != body.count {
            throw RawClientError("curl \(target): body of \(body.count) bytes, Content-Length \(length)")
        }
        response += Array(body)
        return RawResponse(response)
    }
}

/// A TCP port nothing listens on right now (it may be taken before the caller binds it: callers that
/// bind later must notice and try again).
func freePort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    guard bound else { throw RawClientError("bind: \(String(cString: strerror(errno)))") }
    return UInt16(bigEndian: address.sin_port)
}
