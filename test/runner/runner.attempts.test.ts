/** The runner's attempts with the `coord` this test run built (test/runner/attempts.suite.ts). */
import { builtCoord } from '../cli/helpers.js';
import { attemptsSuite } from './attempts.suite.js';

attemptsSuite(builtCoord);
