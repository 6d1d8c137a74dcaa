import Testing

@Suite struct CryptoTestsPlaceholder {}
