/** The S3 price table lives with keepwork bench (src/bench/s3-prices.ts); the repository's benches price by it too. */
export * from '../../src/bench/s3-prices.js';
