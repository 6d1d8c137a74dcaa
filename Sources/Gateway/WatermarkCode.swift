/// The error-correcting code of session watermarks: the extended binary BCH code [64, 36, 12].
///
/// The cyclic part is the narrow-sense BCH code of length 63 over GF(2⁶) (primitive polynomial
/// x⁶ + x + 1) with designed distance 11: its generator is the product of the minimal polynomials of
/// α¹, α³, α⁵, α⁷ and α⁹ (27 check bits, so 36 message bits). An overall parity bit extends it to 64
/// bits and raises the minimum distance to 12: two sessions whose 36-bit messages differ get codewords
/// that differ in at least 12 of 64 segments' variants, and a hard decoder could correct 5 errors. The
/// watermark decoder uses the code's distance, not an algebraic decoder: it correlates the soft scores
/// read from a copy against each candidate session's codeword (maximum likelihood among the candidates).
public enum WatermarkCode {
    /// Coded bits per codeword.
    public static let length = 64
    /// Message bits per codeword.
    public static let messageBits = 36
    /// The code's minimum Hamming distance.
    public static let minimumDistance = 12
    /// Check bits of the cyclic part: the degree of the generator.
    static let checkBits = 27

    /// The generator polynomial of the length-63 code, bit i the coefficient of xⁱ.
    public static let generator: UInt64 = {
        let field = GaloisField64()
        var product: [UInt8] = [1]
        var done = Set<Int>()
        for root in stride(from: 1, through: 9, by: 2) where !done.contains(root) {
            // The cyclotomic coset of `root`: its conjugates root·2ᵏ mod 63.
            var coset: [Int] = []
            var member = root
            repeat {
                coset.append(member)
                member = member * 2 % 63
            } while member != root
            done.formUnion(coset)
            for conjugate in coset { product = field.multiply(product, [field.power(conjugate), 1]) }
        }
        // The product of whole cosets has its coefficients in GF(2).
        var bits: UInt64 = 0
        for (degree, coefficient) in product.enumerated() {
            precondition(coefficient <= 1, "a minimal polynomial left GF(2)")
            bits |= UInt64(coefficient) << UInt64(degree)
        }
        return bits
    }()

    /// The codeword of `message` (its low 36 bits): systematic, the message in bits 27...62, the
    /// remainder of message·x²⁷ divided by the generator in bits 0...26, and in bit 63 the parity of
    /// bits 0...62. Bit i of the result is codeword bit i.
    public static func encode(_ message: UInt64) -> UInt64 {
        let shifted = (message & (1 << UInt64(messageBits) - 1)) << UInt64(checkBits)
        let cyclic = shifted | remainder(shifted)
        return cyclic | UInt64(cyclic.nonzeroBitCount & 1) << 63
    }

    /// `polynomial` modulo the generator, over GF(2).
    static func remainder(_ polynomial: UInt64) -> UInt64 {
        var rest = polynomial
        for degree in stride(from: 62, through: checkBits, by: -1) where rest >> UInt64(degree) & 1 == 1 {
            rest ^= generator << UInt64(degree - checkBits)
        }
        return rest
    }
}

/// GF(2⁶) by the primitive polynomial x⁶ + x + 1: the field the BCH generator's roots live in.
struct GaloisField64 {
    /// αⁱ for i in 0..<63.
    let exponentials: [UInt8]
    /// log_α(x) for x in 1..<64.
    let logarithms: [Int]

    init() {
        var exponentials = [UInt8](repeating: 0, count: 63)
        var logarithms = [Int](repeating: 0, count: 64)
        var value: UInt8 = 1
        for exponent in 0..<63 {
            exponentials[exponent] = value
            logarithms[Int(value)] = exponent
            value <<= 1
            if value & 0x40 != 0 { value ^= 0x43 }
        }
        self.exponentials = exponentials
        self.logarithms = logarithms
    }

    /// αᵉ.
    func power(_ exponent: Int) -> UInt8 { exponentials[(exponent % 63 + 63) % 63] }

    /// The product of two field elements.
    func product(_ a: UInt8, _ b: UInt8) -> UInt8 {
        guard a != 0, b != 0 else { return 0 }
        return exponentials[(logarithms[Int(a)] + logarithms[Int(b)]) % 63]
    }

    /// The product of two polynomials with coefficients in the field, lowest degree first.
    func multiply(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: a.count + b.count - 1)
        for (i, x) in a.enumerated() {
            for (j, y) in b.enumerated() { result[i + j] ^= product(x, y) }
        }
        return result
    }

    /// The binary polynomial `bits` (bit i the coefficient of xⁱ) evaluated at `x`.
    func evaluate(_ bits: UInt64, at x: UInt8) -> UInt8 {
        var sum: UInt8 = 0
        var power: UInt8 = 1
        for degree in 0..<64 {
            if bits >> UInt64(degree) & 1 == 1 { sum ^= power }
            power = product(power, x)
        }
        return sum
    }
}
