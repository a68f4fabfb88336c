// Validates ServiceMonitor objects against the prometheus-operator CRD schema
// (@kubernetes-models/prometheus-operator). Reads a JSON array of objects on
// stdin; prints one line per failure; exits 1 when any failed.
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';

let input = '';
for await (const chunk of process.stdin) input += chunk;
let failed = 0;
for (const doc of JSON.parse(input)) {
  try {
    new ServiceMonitor(doc).validate();
  } catch (e) {
    failed++;
    console.log(`ServiceMonitor/${doc?.metadata?.name}: ${e.message}`);
  }
}
process.exit(failed ? 1 : 0);
