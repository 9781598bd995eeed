/** `npm run contract:export`: writes the JSON export of the contract and the top-level nats.conf. */
import { writeFileSync } from "node:fs";
import { exportContract } from "../contract/export.js";
import { renderNatsConf } from "../contract/nats-conf.js";
import { CONTRACT_JSON_PATH, NATS_CONF_PATH } from "./paths.js";

writeFileSync(CONTRACT_JSON_PATH, JSON.stringify(exportContract(), null, 2) + "\n");
writeFileSync(NATS_CONF_PATH, renderNatsConf());
process.stdout.write(`wrote ${CONTRACT_JSON_PATH}\nwrote ${NATS_CONF_PATH}\n`);
