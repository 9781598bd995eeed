import { runActorProcess } from "../../shared/runtime/actor.js";
import { definition } from "./actor.js";

runActorProcess(definition);
