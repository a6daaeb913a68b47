// The SDK moved to its own package, @taskhook/sdk: `taskhook` and `taskhook/sdk` re-export it so
// workers written against 0.1 keep working. New code imports @taskhook/sdk.
export * from '@taskhook/sdk';
