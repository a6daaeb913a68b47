export * from '@taskhook/sdk';
