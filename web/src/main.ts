import { createApp } from "vue";
import { createPinia } from "pinia";
import App from "./App.vue";
import { createConsoleRouter } from "./router.ts";
import "./style.css";

const pinia = createPinia();
createApp(App).use(pinia).use(createConsoleRouter(pinia)).mount("#app");
